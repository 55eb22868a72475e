// Groups of runs (by group id, e.g. a tune study; by parent run; or by tag) and, for one group,
// a chosen config parameter plotted against a chosen final metric across its runs.
import { api, Run } from "../api";
import { scatterChart } from "../chart";
import { clear, h, statusBadge } from "../dom";
import { fmtNum, fmtTime, lowerIsBetter } from "../format";
import { type Cleanup, setHashParams } from "../router";

const KINDS: [string, string][] = [
  ["group", "Group id"],
  ["parent", "Parent run"],
  ["tag", "Tag"],
];

export async function renderGroups(root: HTMLElement, params: URLSearchParams): Promise<Cleanup> {
  const by = params.get("by") ?? "group";
  const id = params.get("id");
  root.append(
    h("h1", {}, "Groups"),
    h("div", { class: "sub" }, "Runs grouped by group id (a tune study or sweep), by parent run, or by tag."),
    h(
      "div",
      { class: "tabs" },
      KINDS.map(([k, label]) => h("a", { href: `#/groups?by=${k}`, class: k === by ? "active" : "" }, label)),
    ),
  );
  if (id === null) {
    const { groups } = await api.groups(by);
    if (groups.length === 0) {
      root.append(h("div", { class: "empty panel" }, `No runs are grouped by ${by}.`));
      return () => {};
    }
    root.append(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "groups-table" },
          h(
            "thead",
            {},
            h("tr", {}, h("th", {}, by === "parent" ? "parent run" : by), ["runs", "running", "finished", "failed", "stopped"].map((c) => h("th", { class: "num" }, c)), h("th", {}, "first start"), h("th", {}, "last start")),
          ),
          h(
            "tbody",
            {},
            groups.map((g) =>
              h(
                "tr",
                {},
                h("td", {}, h("a", { href: `#/groups?by=${by}&id=${encodeURIComponent(g.group_id)}` }, g.group_id)),
                [g.runs, g.running, g.finished, g.failed, g.stopped].map((n) => h("td", { class: "num" }, String(n))),
                h("td", {}, fmtTime(g.first_start_time)),
                h("td", {}, fmtTime(g.last_start_time)),
              ),
            ),
          ),
        ),
      ),
    );
    return () => {};
  }

  const filter = by === "parent" ? { parent: id } : by === "tag" ? { tag: id } : { group: id };
  const list = await api.runs({ ...filter, include_params: "all", limit: 10000, sort: "id", order: "asc" });
  const runs = list.runs;
  root.append(
    h("h2", {}, `${by === "parent" ? "Children of run " : by === "tag" ? "Tag " : "Group "}${id} · ${list.total} runs`),
  );
  if (by === "parent") root.append(h("div", { class: "hint" }, h("a", { href: `#/run/${id}` }, `open parent run ${id}`)));
  if (runs.length === 0) {
    root.append(h("div", { class: "empty panel" }, "No runs in this group."));
    return () => {};
  }

  // Parameters that vary across the group first: they are what a study explores.
  const values = new Map<string, Set<string>>();
  for (const r of runs) for (const [k, v] of Object.entries(r.params ?? {})) (values.get(k) ?? values.set(k, new Set()).get(k)!).add(v);
  const paramKeys = [...values.keys()].sort((a, b) => Number(values.get(b)!.size > 1) - Number(values.get(a)!.size > 1) || a.localeCompare(b));
  // Metrics that vary first, objective-looking names (auc, logloss, loss) before others.
  const metricVaries = (k: string) => new Set(runs.map((r) => r.final_metrics[k]).filter((v) => v !== undefined)).size > 1;
  const rank = (k: string) => (metricVaries(k) ? 0 : 4) + (/auc/i.test(k) ? 0 : /logloss/i.test(k) ? 1 : /loss/i.test(k) ? 2 : 3);
  const metricKeys = [...new Set(runs.flatMap((r) => Object.keys(r.final_metrics)))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));

  const xSel = h("select", { id: "group-param" }, paramKeys.map((k) => h("option", { value: k }, `${k}${values.get(k)!.size > 1 ? ` (${values.get(k)!.size} values)` : ""}`)));
  const ySel = h("select", { id: "group-metric" }, metricKeys.map((k) => h("option", { value: k }, k)));
  if (params.get("x") && paramKeys.includes(params.get("x")!)) xSel.value = params.get("x")!;
  if (params.get("y") && metricKeys.includes(params.get("y")!)) ySel.value = params.get("y")!;
  const logBox = h("input", { type: "checkbox", id: "group-logx" });
  let logTouched = false;
  logBox.addEventListener("change", () => {
    logTouched = true;
    draw();
  });
  const plotHost = h("div", { id: "group-plot" });
  const tableHost = h("div");
  root.append(
    h("div", { class: "toolbar" }, h("label", {}, "parameter ", xSel), h("label", {}, "vs metric ", ySel), h("label", {}, logBox, " log x")),
    plotHost,
    h("h2", {}, "Runs"),
    tableHost,
  );

  function draw(): void {
    const x = xSel.value;
    const y = ySel.value;
    const p = new URLSearchParams({ by, id: id ?? "" });
    if (x) p.set("x", x);
    if (y) p.set("y", y);
    setHashParams(p);
    clear(plotHost);
    clear(tableHost);
    if (!x || !y) {
      plotHost.append(h("div", { class: "empty panel" }, !x ? "These runs have no config params." : "These runs have no final metrics."));
    }
    const withBoth = runs.filter((r) => r.params?.[x] !== undefined && r.final_metrics[y] !== undefined);
    if (x && y) {
      const raw = withBoth.map((r) => r.params![x]);
      const numeric = raw.every((v) => v.trim() !== "" && Number.isFinite(Number(v)));
      const cats = numeric ? undefined : [...new Set(raw)].sort();
      const nums = numeric ? raw.map(Number) : [];
      const canLog = numeric && nums.length > 0 && nums.every((v) => v > 0);
      // Parameters spanning two or more decades (learning rates) default to a log axis.
      if (!logTouched) logBox.checked = canLog && Math.max(...nums) / Math.min(...nums) >= 100;
      logBox.disabled = !canLog;
      plotHost.append(
        scatterChart({
          title: `${y} vs ${x} (${withBoth.length} runs)`,
          xLabel: x,
          yLabel: y,
          xs: raw.map((v) => (numeric ? Number(v) : cats!.indexOf(v))),
          ys: withBoth.map((r) => r.final_metrics[y]),
          categories: cats,
          labels: withBoth.map((r) => `run ${r.id} ${r.name}`),
          logX: canLog && logBox.checked,
        }),
      );
    }
    const sign = lowerIsBetter(y) ? 1 : -1;
    const sorted = [...runs].sort((a, b) => sign * ((a.final_metrics[y] ?? Infinity * sign) - (b.final_metrics[y] ?? Infinity * sign)));
    const best = sorted.filter((r) => r.final_metrics[y] !== undefined).slice(0, 5);
    if (best.length >= 2) {
      tableHost.append(h("div", { class: "toolbar" }, h("a", { href: `#/compare?ids=${best.map((r) => r.id).join(",")}` }, `Compare the best ${best.length} by ${y}`)));
    }
    tableHost.append(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "group-runs" },
          h("thead", {}, h("tr", {}, h("th", {}, "id"), h("th", {}, "name"), h("th", {}, "status"), h("th", {}, x || "param"), h("th", { class: "num" }, y || "metric"))),
          h(
            "tbody",
            {},
            sorted.map((r: Run) =>
              h(
                "tr",
                {},
                h("td", {}, String(r.id)),
                h("td", {}, h("a", { href: `#/run/${r.id}` }, r.name)),
                h("td", {}, statusBadge(r.status)),
                h("td", {}, r.params?.[x] ?? "—"),
                h("td", { class: "num" }, fmtNum(r.final_metrics[y])),
              ),
            ),
          ),
        ),
      ),
    );
  }
  xSel.addEventListener("change", () => {
    logTouched = false;
    draw();
  });
  ySel.addEventListener("change", draw);
  draw();
  return () => {};
}
