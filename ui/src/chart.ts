// Line and scatter charts over uPlot. A LineChart owns a loader: on a drag-zoom it asks the
// loader for the zoomed step range (the server re-downsamples it, so a 1,000,000-point series
// shows full detail when zoomed in); double-click goes back to the whole range.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "./dom";
import { fmtAxis, fmtNum, PALETTE } from "./format";

export interface Range {
  min: number;
  max: number;
}

export interface LineSpec {
  title: string;
  labels: string[]; // One per y series.
  colors?: string[];
  height?: number;
  xLabel?: string; // default "step" (shown rounded); another label shows the x value as is
  // Returns [xs, ys0, ys1, ...] aligned on xs (null = no value), for the range or everything.
  load: (range?: Range) => Promise<uPlot.AlignedData>;
  note?: (data: uPlot.AlignedData, range?: Range) => string;
}

function countPoints(data: uPlot.AlignedData): number {
  let n = 0;
  for (let s = 1; s < data.length; s++) {
    for (const v of data[s] as (number | null | undefined)[]) if (v !== null && v !== undefined) n++;
  }
  return n;
}

const charts = new Set<{ resize(): void }>();
let resizeTimer = 0;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = window.setTimeout(() => charts.forEach((c) => c.resize()), 100);
});

function widthOf(el: HTMLElement): number {
  return Math.max(320, Math.floor(el.getBoundingClientRect().width) - 2);
}

export class LineChart {
  readonly el: HTMLElement;
  private plot: uPlot | null = null;
  private body: HTMLElement;
  private noteEl: HTMLElement;
  private range: Range | undefined;
  private quiet = false;
  private seq = 0;
  private zoomTimer = 0;

  constructor(private spec: LineSpec) {
    this.body = h("div", { class: "chart-body" });
    this.noteEl = h("span", { class: "chart-note" });
    this.el = h(
      "div",
      { class: "chart", "data-title": spec.title },
      h("div", { class: "chart-head" }, h("span", { class: "chart-title" }, spec.title), this.noteEl),
      this.body,
    );
  }

  // Loads the data and draws. Call after this.el is in the document (the width is measured).
  async render(): Promise<void> {
    const data = await this.spec.load(this.range);
    this.draw(data);
  }

  // Reloads at the current zoom (live updates).
  async refresh(): Promise<void> {
    const seq = ++this.seq;
    const data = await this.spec.load(this.range);
    if (seq !== this.seq) return;
    this.draw(data);
  }

  resize(): void {
    if (this.plot && this.el.isConnected) this.plot.setSize({ width: widthOf(this.body), height: this.spec.height ?? 240 });
  }

  destroy(): void {
    charts.delete(this);
    this.plot?.destroy();
    this.plot = null;
  }

  private draw(data: uPlot.AlignedData): void {
    const points = countPoints(data);
    this.el.dataset.series = String(data.length - 1);
    this.el.dataset.points = String(points);
    this.noteEl.textContent = this.spec.note ? this.spec.note(data, this.range) : "";
    if (this.plot) {
      this.quiet = true;
      this.plot.setData(data, this.range === undefined);
      if (this.range) this.plot.setScale("x", this.range);
      this.quiet = false;
      return;
    }
    const colors = this.spec.colors ?? PALETTE;
    const opts: uPlot.Options = {
      width: widthOf(this.body),
      height: this.spec.height ?? 240,
      scales: { x: { time: false } },
      legend: { live: true },
      cursor: {
        drag: { x: true, y: false, setScale: true },
        bind: {
          dblclick: () => () => {
            this.range = undefined;
            void this.refresh();
            return null;
          },
        },
      },
      series: [
        {
          label: this.spec.xLabel ?? "step",
          value: (_u, v) => (v === null || v === undefined ? "—" : this.spec.xLabel ? fmtNum(v) : String(Math.round(v))),
        },
        ...this.spec.labels.map((label, i) => ({
          label,
          stroke: colors[i % colors.length],
          width: 1.5,
          spanGaps: true,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => fmtNum(v),
        })),
      ],
      axes: [
        { stroke: "#475569", grid: { stroke: "#e2e8f0" }, ticks: { stroke: "#cbd5e1" } },
        {
          stroke: "#475569",
          size: 64,
          grid: { stroke: "#e2e8f0" },
          ticks: { stroke: "#cbd5e1" },
          values: (_u, splits) => splits.map((v) => fmtAxis(v)),
        },
      ],
      hooks: {
        setScale: [
          (u, key) => {
            if (key !== "x" || this.quiet) return;
            const min = u.scales.x.min;
            const max = u.scales.x.max;
            if (min === undefined || max === undefined || min === null || max === null) return;
            // uPlot also sets the scale itself (auto-ranging, sometimes after a tick); a scale that
            // covers all loaded data is not a zoom. Only double-click resets a zoom.
            const xs = u.data[0];
            if (xs.length === 0 || (min <= xs[0] && max >= xs[xs.length - 1])) return;
            this.range = { min: Math.floor(min), max: Math.ceil(max) };
            clearTimeout(this.zoomTimer);
            this.zoomTimer = window.setTimeout(() => void this.refresh(), 120);
          },
        ],
      },
    };
    this.quiet = true;
    this.plot = new uPlot(opts, data, this.body);
    this.quiet = false;
    charts.add(this);
  }
}

export interface ScatterSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  // Numeric x, or category names (x is then the index).
  xs: number[];
  ys: (number | null)[];
  categories?: string[];
  labels: string[]; // Per point, shown on hover.
  logX?: boolean; // Log10 x axis (positive numeric x only).
}

// Param-vs-metric across a group's runs: points, no lines.
export function scatterChart(spec: ScatterSpec): HTMLElement {
  const order = spec.xs.map((_, i) => i).sort((a, b) => spec.xs[a] - spec.xs[b]);
  const xs = order.map((i) => spec.xs[i]);
  const ys = order.map((i) => spec.ys[i]);
  const names = order.map((i) => spec.labels[i]);
  const body = h("div", { class: "chart-body" });
  const hover = h("span", { class: "chart-note" });
  const el = h(
    "div",
    { class: "chart scatter", "data-title": spec.title, "data-series": "1", "data-points": String(ys.filter((v) => v !== null).length) },
    h("div", { class: "chart-head" }, h("span", { class: "chart-title" }, spec.title), hover),
    body,
  );
  const cats = spec.categories;
  requestAnimationFrame(() => {
    const plot = new uPlot(
      {
        width: widthOf(body),
        height: 320,
        scales: {
          x: cats
            ? { time: false, range: () => [-0.5, cats.length - 0.5] }
            : spec.logX
            ? { time: false, distr: 3, log: 10 }
            : { time: false, range: (_u, min, max) => (min === max ? [min - 1, max + 1] : [min - (max - min) * 0.05, max + (max - min) * 0.05]) },
        },
        legend: { show: false },
        cursor: {
          drag: { x: false, y: false },
          points: { size: 12 },
        },
        series: [
          { label: spec.xLabel },
          {
            label: spec.yLabel,
            stroke: PALETTE[0],
            fill: PALETTE[0] + "55",
            paths: () => null,
            points: { show: true, size: 10, stroke: PALETTE[0], fill: PALETTE[0] + "99" },
          },
        ],
        axes: [
          {
            label: spec.xLabel,
            stroke: "#475569",
            grid: { stroke: "#e2e8f0" },
            ...(cats
              ? { incrs: [1], values: (_u: uPlot, splits: number[]) => splits.map((v) => cats[v] ?? "") }
              : { values: (_u: uPlot, splits: number[]) => splits.map((v) => fmtAxis(v)) }),
          },
          { label: spec.yLabel, stroke: "#475569", size: 64, grid: { stroke: "#e2e8f0" }, values: (_u, s) => s.map((v) => fmtAxis(v)) },
        ],
        hooks: {
          setCursor: [
            (u) => {
              const i = u.cursor.idx;
              hover.textContent =
                i === null || i === undefined
                  ? ""
                  : `${names[i]}: ${spec.xLabel}=${cats ? cats[xs[i]] : fmtNum(xs[i])}, ${spec.yLabel}=${fmtNum(ys[i])}`;
            },
          ],
        },
      },
      [xs, ys],
      body,
    );
    const c = { resize: () => el.isConnected && plot.setSize({ width: widthOf(body), height: 320 }) };
    charts.add(c);
  });
  return el;
}

// Aligns per-run [steps, values] tables on the union of their steps.
export function alignSeries(tables: [number[], (number | null)[]][]): uPlot.AlignedData {
  if (tables.length === 0) return [[]];
  if (tables.length === 1) return [tables[0][0], tables[0][1]];
  return uPlot.join(tables.map((t) => [t[0], t[1]] as uPlot.AlignedData));
}
