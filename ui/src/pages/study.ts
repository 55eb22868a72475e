// A `rectrain tune` study (docs/tune.md): #/study lists the studies (runs tagged "study"),
// #/study/ID shows one: trials by state, the best-so-far curve over wall time, a parallel-
// coordinates plot of the searched parameters against the metric, the rungs trials reached,
// and the live trial table. Polled every 2 s while the study runs (#/study/ID?poll=MS: faster).
//
// What it reads, all written by the tuner (src/rectrain/tune/tuner.cc):
//  - the study run: params tune.metric, tune.mode, tune.keys, tune.rungs, tune.budget, ...;
//    metrics tune/best, tune/elapsed_s and tune/trials_<state>, one step per trial result.
//  - trial runs (parent = the study run): the searched keys as params; final metrics
//    tune/trial, tune/step, tune/value, tune/rung, tune/budget, kept current while they run;
//    status_message "<state>: <reason>" once the tuner has decided.
import { api, Run, RunDetail, Series } from "../api";
import { LineChart } from "../chart";
import { clear, h, statusBadge } from "../dom";
import { fmtDuration, fmtNum, fmtTime } from "../format";
import type { Cleanup } from "../router";
import { parallelCoordinates } from "../parcoords";

const POLL_MS = 2000;
const STATES = ["pending", "running", "paused", "finished", "stopped", "failed"] as const;

export async function renderStudy(root: HTMLElement, params: URLSearchParams, arg: string): Promise<Cleanup> {
  if (arg === "") return renderStudyList(root);
  const id = Number(arg);
  if (!Number.isInteger(id) || id <= 0) throw new Error(`bad study run id '${arg}'`);
  // ?poll=MS (at least 200) polls faster than every 2 s, e.g. to watch a study of short trials.
  const poll = Math.max(200, Number(params.get("poll") ?? POLL_MS) || POLL_MS);
  return renderOneStudy(root, id, poll);
}

async function renderStudyList(root: HTMLElement): Promise<Cleanup> {
  const list = await api.runs({ tag: "study", include_params: "tune.metric,tune.searcher,tune.scheduler,tune.num_samples", limit: 1000, sort: "id", order: "desc" });
  root.append(h("h1", {}, "Studies"), h("div", { class: "sub" }, "Hyperparameter studies run by rectrain tune; each trial is a run linked to its study."));
  if (list.runs.length === 0) {
    root.append(h("div", { class: "empty panel" }, "No studies yet. Run one: rectrain tune examples/tune/deepfm_study.yaml --study-dir runs/tune-deepfm"));
    return () => {};
  }
  root.append(
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { id: "studies-table" },
        h("thead", {}, h("tr", {}, ["study", "status", "metric", "best", "trials", "searcher", "scheduler", "started"].map((c) => h("th", { class: c === "best" || c === "trials" ? "num" : "" }, c)))),
        h(
          "tbody",
          {},
          list.runs.map((r) =>
            h(
              "tr",
              { "data-run-id": String(r.id) },
              h("td", {}, h("a", { href: `#/study/${r.id}` }, r.name)),
              h("td", {}, statusBadge(r.status)),
              h("td", {}, r.params?.["tune.metric"] ?? "—"),
              h("td", { class: "num" }, fmtNum(r.final_metrics["tune/best"])),
              h("td", { class: "num" }, r.params?.["tune.num_samples"] ?? "—"),
              h("td", {}, r.params?.["tune.searcher"] ?? "—"),
              h("td", {}, r.params?.["tune.scheduler"] ?? "—"),
              h("td", {}, fmtTime(r.start_time)),
            ),
          ),
        ),
      ),
    ),
  );
  return () => {};
}

interface TrialRow {
  trial: number; // -1 until the tuner recorded it
  run: Run;
  state: string;
  reason: string;
  value: number | null;
  step: number | null;
  rung: number | null; // highest rung completed; -1 none
  budget: number | null;
}

function trialRow(r: Run): TrialRow {
  const f = r.final_metrics;
  let state: string = r.status;
  let reason = r.status_message;
  const m = /^(paused|finished|stopped|failed): ?(.*)$/s.exec(r.status_message);
  if (r.status === "running") {
    state = "running";
    reason = "";
  } else if (m) {
    state = m[1];
    reason = m[2];
  }
  const num = (k: string) => (f[k] === undefined || f[k] === null ? null : (f[k] as number));
  return { trial: num("tune/trial") ?? -1, run: r, state, reason, value: num("tune/value"), step: num("tune/step"), rung: num("tune/rung"), budget: num("tune/budget") };
}

// The tuner's rule (BestTrial in tune/tuner.cc): among trials that completed a rung and did not
// fail, the highest rung wins, then the better metric (a full run outranks an early stop).
function bestRow(rows: TrialRow[], maximize: boolean): TrialRow | null {
  let best: TrialRow | null = null;
  for (const r of rows) {
    if (r.state === "failed" || r.value === null || !Number.isFinite(r.value) || r.rung === null || r.rung < 0) continue;
    if (best === null || r.rung > best.rung! || (r.rung === best.rung && (maximize ? r.value > best.value! : r.value < best.value!))) best = r;
  }
  return best;
}

function latest(s: Series | undefined): number | null {
  if (!s || s.points.length === 0) return null;
  return s.points[s.points.length - 1][1];
}

async function renderOneStudy(root: HTMLElement, id: number, pollMs: number): Promise<Cleanup> {
  let study: RunDetail = await api.run(id);
  const p = study.params;
  if (p["tune.metric"] === undefined) throw new Error(`run ${id} (${study.name}) is not a study: it has no tune.metric param (studies are runs tagged "study")`);
  const metric = p["tune.metric"];
  const maximize = p["tune.mode"] !== "min";
  const keys = (p["tune.keys"] ?? "").split(",").filter((k) => k !== "");
  const rungs = (p["tune.rungs"] ?? "").split(",").filter((k) => k !== "").map(Number);
  const unit = p["tune.budget"] ?? "steps";

  const title = h("h1", {}, study.name, statusBadge(study.status));
  const sub = h("div", { class: "sub" });
  const cards = h("div", { class: "cards", id: "study-cards" });
  const pcWrap = h("div", { id: "study-parcoords" });
  const rungWrap = h("div", { id: "study-rungs" });
  const tableWrap = h("div", { id: "study-trials" });
  const best = new LineChart({
    title: `best ${metric} so far`,
    labels: [`best ${metric}`],
    xLabel: "seconds",
    height: 260,
    load: async (range) => {
      const m = await api.metrics(id, { key: ["tune/best", "tune/elapsed_s"], max_points: 10000 });
      const bestS = m.series.find((s) => s.key === "tune/best");
      const timeS = m.series.find((s) => s.key === "tune/elapsed_s");
      const at = new Map<number, number>();
      for (const [step, v] of timeS?.points ?? []) if (v !== null) at.set(step, v);
      const xs: number[] = [];
      const ys: (number | null)[] = [];
      for (const [step, v] of bestS?.points ?? []) {
        const t = at.get(step);
        if (t === undefined || (range && (t < range.min || t > range.max))) continue;
        xs.push(t);
        ys.push(v);
      }
      return [xs, ys];
    },
    note: (d) => (d[0].length ? `${d[0].length} results` : "no results yet"),
  });
  best.el.id = "study-best";

  root.append(
    h("div", { class: "toolbar" }, title, h("span", { class: "spacer" }), h("a", { href: `#/run/${id}` }, "study run"), h("a", { href: `#/groups?by=parent&id=${id}` }, "trials as runs")),
    sub,
    cards,
    h("div", { class: "two-col" }, h("div", {}, h("h2", {}, "Best so far"), best.el), h("div", {}, h("h2", {}, "Rungs"), rungWrap)),
    h("h2", {}, "Parameters"),
    pcWrap,
    h("h2", {}, "Trials"),
    tableWrap,
  );

  let sortKey = "trial";
  let sortDesc = false;
  let rows: TrialRow[] = [];

  function renderHeader(pending: number | null): void {
    clear(title);
    title.append(study.name, " ", statusBadge(study.status));
    const end = study.end_time ?? Date.now() / 1000;
    sub.textContent =
      `study run ${study.id} · ${p["tune.searcher"] ?? "?"} searcher · ${p["tune.scheduler"] ?? "?"} scheduler` +
      (rungs.length ? ` · rungs ${rungs.join(", ")} ${unit}` : "") +
      ` · ${p["tune.concurrency"] ?? "?"} at once · started ${fmtTime(study.start_time)} · ${fmtDuration(end - study.start_time)}` +
      (study.status_message ? ` · ${study.status_message}` : "");
    const count = (s: string) => rows.filter((r) => r.state === s).length;
    const top = bestRow(rows, maximize);
    clear(cards);
    const card = (k: string, v: string, attrs: Record<string, string> = {}) => h("div", { class: "card", ...attrs }, h("div", { class: "k" }, k), h("div", { class: "v" }, v));
    cards.append(
      card(`best ${metric} (${maximize ? "max" : "min"})`, top ? fmtNum(top.value) : "—", { id: "study-best-value" }),
      card("best trial", top ? `t${String(top.trial).padStart(3, "0")}` : "—"),
      card("trials", `${rows.length + (pending ?? 0)} of ${p["tune.num_samples"] ?? "?"}`, { id: "study-trial-count" }),
      ...STATES.map((s) => card(s, String(s === "pending" ? pending ?? 0 : count(s)), { "data-state": s })),
    );
  }

  function renderRungs(): void {
    clear(rungWrap);
    if (rungs.length === 0) {
      rungWrap.append(h("div", { class: "empty panel" }, `The ${p["tune.scheduler"] ?? ""} scheduler has no rungs: every trial runs its whole budget.`));
      return;
    }
    // Trials that completed each rung (tune/rung is the highest completed; -1 none).
    const reached = rungs.map((_, k) => rows.filter((r) => r.rung !== null && r.rung >= k).length);
    const max = Math.max(1, ...reached);
    rungWrap.append(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "rungs-table" },
          h("thead", {}, h("tr", {}, h("th", {}, "rung"), h("th", { class: "num" }, unit), h("th", { class: "num" }, "trials reached"), h("th", {}, ""))),
          h(
            "tbody",
            {},
            rungs.map((b, k) =>
              h(
                "tr",
                {},
                h("td", {}, String(k)),
                h("td", { class: "num" }, String(b)),
                h("td", { class: "num" }, String(reached[k])),
                h("td", { style: "width: 50%" }, h("div", { class: "bar", style: `width: ${((100 * reached[k]) / max).toFixed(1)}%` })),
              ),
            ),
          ),
        ),
      ),
    );
  }

  function renderParCoords(): void {
    clear(pcWrap);
    if (keys.length === 0 || rows.length === 0) {
      pcWrap.append(h("div", { class: "empty panel" }, rows.length === 0 ? "No trials have started yet." : "The study searches no keys."));
      return;
    }
    pcWrap.append(
      parallelCoordinates({
        axes: keys,
        metric,
        higherIsBetter: maximize,
        rows: rows.map((r) => ({
          label: r.trial >= 0 ? `t${String(r.trial).padStart(3, "0")}` : r.run.name,
          href: `#/run/${r.run.id}`,
          values: keys.map((k) => r.run.params?.[k]),
          metric: r.state === "failed" ? null : r.value,
        })),
      }),
    );
  }

  function sortedRows(): TrialRow[] {
    const val = (r: TrialRow): number | string => {
      if (sortKey === "trial") return r.trial;
      if (sortKey === "value") return r.value ?? (maximize ? -Infinity : Infinity);
      if (sortKey === "step") return r.step ?? -1;
      if (sortKey === "rung") return r.rung ?? -1;
      if (sortKey === "state") return r.state;
      return r.run.params?.[sortKey] ?? "";
    };
    return [...rows].sort((a, b) => {
      const x = val(a);
      const y = val(b);
      const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
      return sortDesc ? -c : c;
    });
  }

  function renderTable(): void {
    clear(tableWrap);
    if (rows.length === 0) {
      tableWrap.append(h("div", { class: "empty panel" }, "No trials have started yet."));
      return;
    }
    const top = bestRow(rows, maximize);
    const cols: [string, string, boolean][] = [["trial", "trial", false], ["state", "state", false], ...keys.map((k): [string, string, boolean] => [k, k, false]), ["step", "step", true], ["value", metric, true], ["rung", "rung", true]];
    const th = ([key, label, num]: [string, string, boolean]) => {
      const cell = h("th", { class: `sortable${num ? " num" : ""}`, "data-col": key }, label, sortKey === key ? h("span", { class: "arrow" }, sortDesc ? "▼" : "▲") : null);
      cell.addEventListener("click", () => {
        if (sortKey === key) sortDesc = !sortDesc;
        else {
          sortKey = key;
          sortDesc = key === "value" ? maximize : false;
        }
        renderTable();
      });
      return cell;
    };
    tableWrap.append(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "trials-table" },
          h("thead", {}, h("tr", {}, cols.map(th), h("th", {}, "reason"))),
          h(
            "tbody",
            {},
            sortedRows().map((r) =>
              h(
                "tr",
                { "data-trial": String(r.trial), "data-state": r.state, "data-run-id": String(r.run.id) },
                h("td", {}, h("a", { href: `#/run/${r.run.id}` }, r.trial >= 0 ? `t${String(r.trial).padStart(3, "0")}` : r.run.name)),
                h("td", {}, statusBadge(r.state)),
                keys.map((k) => h("td", { class: r.run.params?.[k] === undefined ? "missing" : "" }, r.run.params?.[k] ?? "—")),
                h("td", { class: "num" }, r.step === null ? "—" : String(r.step)),
                h("td", { class: `num${r === top ? " best" : ""}` }, fmtNum(r.value)),
                h("td", { class: "num" }, r.rung === null || r.rung < 0 ? "—" : String(r.rung)),
                h("td", { class: "reason", title: r.reason }, r.reason),
              ),
            ),
          ),
        ),
      ),
    );
  }

  async function load(): Promise<void> {
    const [detail, list, counts] = await Promise.all([
      api.run(id),
      api.runs({ parent: id, include_params: keys.join(",") || "none", limit: 10000, sort: "id", order: "asc" }),
      api.metrics(id, { key: "tune/trials_pending", max_points: 2 }),
    ]);
    study = detail;
    rows = list.runs.map(trialRow);
    renderHeader(latest(counts.series[0]));
    renderRungs();
    renderParCoords();
    renderTable();
  }

  const t0 = performance.now();
  await load();
  await best.render();
  root.dataset.renderMs = String(Math.round(performance.now() - t0));

  let timer = 0;
  let stopped = false;
  const poll = async () => {
    if (stopped) return;
    if (study.status === "running") {
      try {
        await load();
        await best.refresh();
      } catch {
        // a transient error (the server restarting) is retried at the next tick
      }
    }
    if (!stopped && study.status === "running") timer = window.setTimeout(() => void poll(), pollMs);
  };
  if (study.status === "running") timer = window.setTimeout(() => void poll(), pollMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
    best.destroy();
  };
}
