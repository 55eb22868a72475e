// Compare 2..10 runs: metric curves overlaid (drag to zoom, double-click to reset), final
// metrics side by side (best highlighted), and a config diff with only the differing keys.
import { api, Comparison, Series } from "../api";
import { alignSeries, LineChart } from "../chart";
import { errorBox, h, statusBadge } from "../dom";
import { fmtNum, isSystemKey, lowerIsBetter, PALETTE } from "../format";
import type { Cleanup } from "../router";

function seriesTable(s: Series | undefined): [number[], (number | null)[]] {
  if (!s) return [[], []];
  return [s.points.map((p) => p[0]), s.points.map((p) => p[1])];
}

export async function renderCompare(root: HTMLElement, params: URLSearchParams): Promise<Cleanup> {
  const ids = (params.get("ids") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  root.append(h("h1", {}, "Compare runs"));
  const idInput = h("input", { type: "text", placeholder: "run ids, e.g. 3,5,8", value: ids.join(","), id: "compare-ids" });
  const go = () => {
    window.location.hash = `#/compare?ids=${idInput.value.replace(/\s+/g, "")}`;
  };
  idInput.addEventListener("keydown", (e) => e.key === "Enter" && go());
  root.append(h("div", { class: "toolbar" }, idInput, h("button", { onclick: go }, "Compare"), h("span", { class: "hint" }, "Tip: select runs in the Runs table and press Compare.")));
  if (ids.length < 2 || ids.length > 10 || ids.some((x) => !Number.isInteger(x) || x <= 0)) {
    root.append(h("div", { class: "empty" }, "Choose 2 to 10 runs to compare (positive integer ids)."));
    return () => {};
  }

  const cmp: Comparison = await api.compare(ids);
  const details = await Promise.all(ids.map((id) => api.run(id)));
  const initial = await Promise.all(ids.map((id) => api.metrics(id, { max_points: 1000 })));
  const color = (i: number) => PALETTE[i % PALETTE.length];

  root.append(
    h(
      "div",
      { class: "cards", id: "compare-runs" },
      cmp.runs.map((r, i) =>
        h(
          "div",
          { class: "card" },
          h("div", { class: "k" }, h("span", { class: "swatch", style: `background:${color(i)}` }), `run ${r.id}`),
          h("div", {}, h("a", { href: `#/run/${r.id}` }, r.name), " ", statusBadge(r.status)),
        ),
      ),
    ),
  );

  // Final metrics side by side.
  root.append(h("h2", {}, "Final metrics"));
  if (cmp.final_metrics.length === 0) {
    root.append(h("div", { class: "empty panel" }, "None of these runs has final metrics."));
  } else {
    root.append(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "final-metrics" },
          h("thead", {}, h("tr", {}, h("th", {}, "metric"), cmp.runs.map((r, i) => h("th", { class: "num" }, h("span", { class: "swatch", style: `background:${color(i)}` }), r.name)))),
          h(
            "tbody",
            {},
            cmp.final_metrics.map((m) => {
              const vals = m.values.filter((v): v is number => v !== null && !Number.isNaN(v));
              const best = vals.length > 1 ? (lowerIsBetter(m.key) ? Math.min(...vals) : Math.max(...vals)) : null;
              return h(
                "tr",
                {},
                h("td", {}, m.key),
                m.values.map((v) => h("td", { class: "num" + (v === null ? " missing" : "") + (v !== null && v === best ? " best" : "") }, fmtNum(v))),
              );
            }),
          ),
        ),
      ),
    );
  }

  // Config diff.
  root.append(h("h2", {}, `Config differences (${cmp.differing_params.length})`));
  if (cmp.differing_params.length === 0) {
    root.append(h("div", { class: "empty panel" }, "The configs are identical."));
  } else {
    root.append(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "config-diff" },
          h("thead", {}, h("tr", {}, h("th", {}, "key"), cmp.runs.map((r, i) => h("th", {}, h("span", { class: "swatch", style: `background:${color(i)}` }), r.name)))),
          h(
            "tbody",
            {},
            cmp.differing_params.map((p) =>
              h("tr", {}, h("td", {}, p.key), p.values.map((v) => h("td", { class: v === null ? "missing" : "diff" }, v ?? "(absent)"))),
            ),
          ),
        ),
      ),
    );
  }

  // Curves: one chart per metric key, one line per run.
  const keys = new Set<string>();
  details.forEach((d) => d.metric_keys.forEach((k) => keys.add(k.key)));
  const sorted = [...keys].sort((a, b) => Number(isSystemKey(a)) - Number(isSystemKey(b)) || a.localeCompare(b));
  root.append(h("h2", {}, "Metric curves"), h("div", { class: "hint" }, "Drag across a chart to zoom (the server re-samples the range); double-click to reset."));
  const grid = h("div", { class: "grid", id: "compare-charts" });
  root.append(grid);
  const charts: LineChart[] = [];
  for (const key of sorted) {
    const chart = new LineChart({
      title: key,
      labels: cmp.runs.map((r) => `${r.id} ${r.name}`),
      load: async (range) => {
        if (!range) return alignSeries(initial.map((m) => seriesTable(m.series.find((s) => s.key === key))));
        const zoomed = await Promise.all(ids.map((id) => api.metrics(id, { key, max_points: 1000, min_step: range.min, max_step: range.max })));
        return alignSeries(zoomed.map((m) => seriesTable(m.series[0])));
      },
    });
    charts.push(chart);
    grid.append(chart.el);
  }
  if (sorted.length === 0) grid.append(h("div", { class: "empty panel" }, "These runs logged no metrics."));
  await Promise.all(charts.map((c) => c.render().catch((e) => c.el.append(errorBox(e)))));
  return () => charts.forEach((c) => c.destroy());
}
