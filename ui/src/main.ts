// Hash router: #/runs, #/compare?ids=1,2, #/run/7, #/groups?by=group&id=study, #/study/3.
// Each page renders into #app and returns a cleanup (stops polling, frees charts).
import "./style.css";
import { hasToken } from "./api";
import { clear, errorBox } from "./dom";
import { renderCompare } from "./pages/compare";
import { renderGroups } from "./pages/groups";
import { renderRun } from "./pages/run";
import { renderRuns } from "./pages/runs";
import { renderStudy } from "./pages/study";

export type Cleanup = () => void;
export type Page = (root: HTMLElement, params: URLSearchParams, arg: string) => Cleanup | Promise<Cleanup>;

const routes: Record<string, Page> = {
  runs: renderRuns,
  compare: renderCompare,
  run: renderRun,
  groups: renderGroups,
  study: renderStudy,
};

let cleanup: Cleanup | null = null;
let generation = 0;

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

async function route(): Promise<void> {
  const gen = ++generation;
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  const root = document.getElementById("app")!;
  clear(root);
  const { page, arg, params } = parseHash();
  document.querySelectorAll<HTMLAnchorElement>("[data-nav]").forEach((a) => {
    a.classList.toggle("active", a.dataset.nav === page || (page === "run" && a.dataset.nav === "runs"));
  });
  const render = routes[page];
  if (!render) {
    root.appendChild(errorBox(new Error(`no page '${page}'`)));
    return;
  }
  try {
    const c = await render(root, params, decodeURIComponent(arg));
    if (gen !== generation) c();
    else cleanup = c;
  } catch (e) {
    if (gen === generation) root.appendChild(errorBox(e));
  }
}

const conn = document.getElementById("conn");
if (conn) conn.textContent = hasToken() ? "token auth" : "";
window.addEventListener("hashchange", () => void route());
void route();
