// The hash's shape, shared by main.ts (which routes on it) and the pages (which keep their
// filters in it): #/page/arg?query. No imports and no side effects, so that a page importing it
// does not boot the app (main.ts does, on import).
export type Cleanup = () => void;
export type Page = (root: HTMLElement, params: URLSearchParams, arg: string) => Cleanup | Promise<Cleanup>;

export function parseHash(): { page: string; arg: string; params: URLSearchParams } {
  const raw = window.location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?", 2);
  const [page = "runs", arg = ""] = path.split("/");
  return { page: page || "runs", arg, params: new URLSearchParams(query) };
}

// Replaces the query of the current page without adding a history entry per keystroke.
export function setHashParams(params: URLSearchParams, push = false): void {
  const { page, arg } = parseHash();
  const q = params.toString();
  const hash = `#/${page}${arg ? "/" + arg : ""}${q ? "?" + q : ""}`;
  if (hash === window.location.hash) return;
  if (push) {
    window.location.hash = hash;
  } else {
    history.replaceState(null, "", window.location.pathname + window.location.search + hash);
  }
}
