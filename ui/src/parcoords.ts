// Parallel coordinates in SVG: one vertical axis per searched parameter and a last axis for
// the metric; one polyline per trial, coloured by its metric (best = dark blue, worst = light).
// Numeric axes are linear, or log10 when every value is positive and they span more than two
// decades (a loguniform learning rate); other values get a categorical axis. Trials without a
// metric (failed, or not yet evaluated) are drawn grey and dashed, ending at the bottom.
// Hovering a line highlights it and names the trial; clicking opens its run.
import { fmtAxis, fmtNum } from "./format";

export interface ParCoordsSpec {
  axes: string[]; // parameter keys, in order
  metric: string; // label of the last axis
  higherIsBetter: boolean;
  rows: { label: string; href?: string; values: (string | undefined)[]; metric: number | null }[];
}

const SVG = "http://www.w3.org/2000/svg";
const HEIGHT = 320;
const TOP = 28;
const BOTTOM = 36;
const SIDE = 70;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

interface Axis {
  label: string;
  // Position in [0, 1] (0 = bottom) of a value, or null when it has none.
  pos: (v: string | undefined) => number | null;
  ticks: { at: number; text: string }[];
}

function numericAxis(label: string, values: (string | undefined)[]): Axis | null {
  const nums: number[] = [];
  for (const v of values) {
    if (v === undefined || v === "") continue;
    const x = Number(v);
    if (!Number.isFinite(x)) return null;
    nums.push(x);
  }
  if (nums.length === 0) return null;
  let lo = Math.min(...nums);
  let hi = Math.max(...nums);
  const log = lo > 0 && hi / lo > 100;
  const f = log ? Math.log10 : (x: number) => x;
  if (lo === hi) {
    lo = log ? lo / 10 : lo - 1;
    hi = log ? hi * 10 : hi + 1;
  }
  const a = f(lo);
  const b = f(hi);
  const pos = (v: string | undefined) => (v === undefined || v === "" ? null : (f(Number(v)) - a) / (b - a));
  const ticks: { at: number; text: string }[] = [];
  if (log) {
    for (let e = Math.ceil(a); e <= Math.floor(b); e++) ticks.push({ at: (e - a) / (b - a), text: fmtAxis(10 ** e) });
  }
  if (ticks.length < 2) {
    for (let i = 0; i <= 4; i++) {
      const x = log ? 10 ** (a + ((b - a) * i) / 4) : lo + ((hi - lo) * i) / 4;
      ticks.push({ at: i / 4, text: fmtAxis(x) });
    }
  }
  return { label: label + (log ? " (log)" : ""), pos, ticks };
}

function categoricalAxis(label: string, values: (string | undefined)[]): Axis {
  const cats = [...new Set(values.filter((v): v is string => v !== undefined))].sort();
  const at = (i: number) => (cats.length === 1 ? 0.5 : i / (cats.length - 1));
  return {
    label,
    pos: (v) => (v === undefined ? null : at(cats.indexOf(v))),
    ticks: cats.map((c, i) => ({ at: at(i), text: c.length > 18 ? c.slice(0, 17) + "…" : c })),
  };
}

// Light (worst) to dark (best) blue.
function shade(t: number): string {
  const mix = (x: number, y: number) => Math.round(x + (y - x) * t);
  return `rgb(${mix(191, 30)}, ${mix(219, 64)}, ${mix(254, 175)})`;
}

export function parallelCoordinates(spec: ParCoordsSpec): HTMLElement {
  const el = document.createElement("div");
  el.className = "chart parcoords";
  el.dataset.title = "parallel coordinates";
  const head = document.createElement("div");
  head.className = "chart-head";
  const title = document.createElement("span");
  title.className = "chart-title";
  title.textContent = `Parameters vs ${spec.metric}`;
  const hover = document.createElement("span");
  hover.className = "chart-note";
  hover.textContent = "hover a line to name its trial; click to open it";
  head.append(title, hover);
  el.append(head);

  const axes: Axis[] = spec.axes.map((k, i) => {
    const vals = spec.rows.map((r) => r.values[i]);
    return numericAxis(k, vals) ?? categoricalAxis(k, vals);
  });
  const metricVals = spec.rows.map((r) => (r.metric === null || !Number.isFinite(r.metric) ? undefined : String(r.metric)));
  axes.push(numericAxis(spec.metric, metricVals) ?? categoricalAxis(spec.metric, metricVals));

  const width = Math.max(1100, 220 * axes.length);
  const root = svg("svg", { viewBox: `0 0 ${width} ${HEIGHT}`, width: "100%", height: HEIGHT, role: "img" });
  root.setAttribute("aria-label", `parallel coordinates of ${spec.axes.join(", ")} against ${spec.metric}`);
  const x = (i: number) => SIDE + ((width - 2 * SIDE) * i) / Math.max(1, axes.length - 1);
  const y = (p: number) => TOP + (1 - p) * (HEIGHT - TOP - BOTTOM);

  // Metric rank -> colour; the best drawn last (on top).
  const scored = spec.rows.map((r, i) => ({ r, i })).filter(({ r }) => r.metric !== null && Number.isFinite(r.metric));
  scored.sort((p, q) => (spec.higherIsBetter ? p.r.metric! - q.r.metric! : q.r.metric! - p.r.metric!));
  const rank = new Map<number, number>();
  scored.forEach(({ i }, k) => rank.set(i, scored.length === 1 ? 1 : k / (scored.length - 1)));
  const order = [...spec.rows.keys()].filter((i) => !rank.has(i)).concat(scored.map(({ i }) => i));

  const lines = svg("g", { class: "pc-lines" });
  let drawn = 0;
  for (const i of order) {
    const r = spec.rows[i];
    const vals = [...r.values, metricVals[i]];
    const pts: string[] = [];
    vals.forEach((v, a) => {
      const p = axes[a].pos(v);
      pts.push(`${x(a).toFixed(1)},${y(p ?? 0).toFixed(1)}`);
    });
    const t = rank.get(i);
    const line = svg("polyline", {
      points: pts.join(" "),
      fill: "none",
      stroke: t === undefined ? "#cbd5e1" : shade(t),
      "stroke-width": t !== undefined && t === 1 ? 2.5 : 1.4,
      "stroke-dasharray": t === undefined ? "4 3" : "none",
      class: "pc-line",
    });
    line.dataset.label = r.label;
    const desc = `${r.label}: ${spec.axes.map((k, a) => `${k}=${r.values[a] ?? "—"}`).join(", ")}, ${spec.metric}=${fmtNum(r.metric)}`;
    const tip = svg("title", {});
    tip.textContent = desc;
    line.append(tip);
    line.addEventListener("mouseenter", () => {
      hover.textContent = desc;
      line.classList.add("hot");
    });
    line.addEventListener("mouseleave", () => line.classList.remove("hot"));
    if (r.href) line.addEventListener("click", () => (window.location.hash = r.href!));
    lines.append(line);
    drawn++;
  }
  root.append(lines);

  axes.forEach((ax, a) => {
    const g = svg("g", { class: "pc-axis" });
    g.append(svg("line", { x1: x(a), x2: x(a), y1: y(0), y2: y(1), stroke: "#475569", "stroke-width": 1 }));
    for (const t of ax.ticks) {
      g.append(svg("line", { x1: x(a) - 4, x2: x(a), y1: y(t.at), y2: y(t.at), stroke: "#475569" }));
      const txt = svg("text", { x: x(a) - 7, y: y(t.at) + 4, "text-anchor": "end", "font-size": 11, fill: "#475569" });
      txt.textContent = t.text;
      g.append(txt);
    }
    const lab = svg("text", { x: x(a), y: TOP - 10, "text-anchor": "middle", "font-size": 12, "font-weight": 600, fill: "#1e293b" });
    lab.textContent = ax.label;
    g.append(lab);
    root.append(g);
  });
  el.dataset.lines = String(drawn);
  el.dataset.axes = String(axes.length);
  el.append(root);
  return el;
}
