// Number, time and duration formatting shared by the pages.

export function fmtTime(unixS: number | null | undefined): string {
  if (unixS === null || unixS === undefined) return "—";
  const d = new Date(unixS * 1000);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtDuration(seconds: number): string {
  if (!(seconds >= 0)) return "—";
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${String(Math.floor(s / 60) % 60).padStart(2, "0")}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor(s / 3600) % 24}h`;
}

export function runDuration(r: { start_time: number; end_time: number | null; heartbeat_time: number }): string {
  const end = r.end_time ?? Math.max(r.heartbeat_time, Date.now() / 1000);
  return fmtDuration(end - r.start_time);
}

export function fmtNum(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—";
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  if (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}

// Compact axis labels: 1.6G, 920k, 0.45, 1e-5.
export function fmtAxis(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return "";
  const a = Math.abs(v);
  const units: [number, string][] = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [scale, suffix] of units) {
    if (a >= scale) return `${Number((v / scale).toPrecision(4))}${suffix}`;
  }
  if (a !== 0 && a < 1e-3) return v.toExponential(1);
  return String(Number(v.toPrecision(4)));
}

export function fmtBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

// Keys of system figures (RSS, CPU, ...), shown in their own section of the run page.
export function isSystemKey(key: string): boolean {
  return /^(system|sys|process)\//.test(key);
}

// Lower is better for these metrics (used to highlight the best run in comparisons).
export function lowerIsBetter(key: string): boolean {
  return /loss|error|err|rmse|mae|mse|ne$|time|latency|rss|memory|bytes/i.test(key);
}

export const PALETTE = [
  "#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c",
  "#0891b2", "#db2777", "#65a30d", "#7c3aed", "#ca8a04",
];
