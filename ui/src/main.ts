// The app: routes the hash (router.ts) to its page: #/runs, #/compare?ids=1,2, #/run/7,
// #/groups?by=group&id=study, #/study/3.
// Each page renders into #app and returns a cleanup (stops polling, frees charts).
import "./style.css";
import { hasToken } from "./api";
import { clear, errorBox } from "./dom";
import { renderCompare } from "./pages/compare";
import { renderGroups } from "./pages/groups";
import { renderRun } from "./pages/run";
import { renderRuns } from "./pages/runs";
import { renderStudy } from "./pages/study";
import { type Cleanup, type Page, parseHash } from "./router";

const routes: Record<string, Page> = {
  runs: renderRuns,
  compare: renderCompare,
  run: renderRun,
  groups: renderGroups,
  study: renderStudy,
};

let cleanup: Cleanup | null = null;
let generation = 0;

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
