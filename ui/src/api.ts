// REST client for the rectrain server (docs/tracking.md, docs/ui.md). If the page URL carries
// ?token=..., every API call sends it as "Authorization: Bearer <token>".

export interface Run {
  id: number;
  name: string;
  status: "running" | "finished" | "failed" | "stopped";
  status_message: string;
  start_time: number;
  end_time: number | null;
  heartbeat_time: number;
  host: string;
  pid: number;
  group_id: string;
  parent_id: number | null;
  git_commit: string;
  tags: string[];
  final_metrics: Record<string, number | null>;
  params?: Record<string, string>;
}

export interface RunList {
  total: number;
  offset: number;
  runs: Run[];
}

export interface MetricKeyInfo {
  key: string;
  count: number;
  first_step: number;
  last_step: number;
  last_value: number | null;
}

export interface RunDetail extends Run {
  config_yaml: string;
  params: Record<string, string>;
  data_files: { path: string; size_bytes: number; fingerprint: string }[];
  artifacts: { kind: string; path: string; created_time: number }[];
  metric_keys: MetricKeyInfo[];
}

export interface Series {
  key: string;
  total_points: number;
  downsampled: boolean;
  points: [number, number | null, number][];
}

export interface MetricsResponse {
  run_id: number;
  series: Series[];
}

export interface Comparison {
  runs: Run[];
  differing_params: { key: string; values: (string | null)[] }[];
  final_metrics: { key: string; values: (number | null)[] }[];
}

export interface Group {
  group_id: string;
  runs: number;
  running: number;
  finished: number;
  failed: number;
  stopped: number;
  first_start_time: number;
  last_start_time: number;
}

export interface LogTail {
  run_id: number;
  path: string;
  size_bytes: number;
  truncated: boolean;
  text: string;
}

// GET /api/runs/{id}/alerts: the run's alerts in Alertmanager (docs/alerts.md).
export interface RunAlert {
  name: string;
  severity: string;
  state: string; // active | suppressed | unprocessed
  summary: string;
  description: string;
  starts_at: string; // RFC 3339
  ends_at: string;
  updated_at: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  silenced_by: string[];
  inhibited_by: string[];
  generator_url: string;
  fingerprint: string;
}

export interface RunAlerts {
  run_id: number;
  alertmanager: string | null;
  alerts: RunAlert[];
  note?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const token: string | null = new URLSearchParams(window.location.search).get("token");

export function hasToken(): boolean {
  return token !== null && token !== "";
}

export type Query = Record<string, string | number | undefined | null | (string | number)[]>;

export function buildQuery(q: Query): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) {
      for (const x of v) p.append(k, String(x));
    } else {
      p.append(k, String(v));
    }
  }
  const s = p.toString();
  return s ? "?" + s : "";
}

async function request<T>(method: string, path: string, q: Query = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token) headers["Authorization"] = "Bearer " + token;
  const res = await fetch(path + buildQuery(q), { method, headers });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(res.status, "BAD_RESPONSE", `${method} ${path}: not JSON (HTTP ${res.status})`);
  }
  if (!res.ok) {
    const err = (body as { error?: { code?: string; message?: string } } | null)?.error;
    throw new ApiError(res.status, err?.code ?? "HTTP_" + res.status, err?.message ?? `HTTP ${res.status}`);
  }
  return body as T;
}

export const api = {
  runs: (q: Query) => request<RunList>("GET", "/api/runs", q),
  run: (id: number) => request<RunDetail>("GET", `/api/runs/${id}`),
  deleteRun: (id: number) => request<{ deleted: number }>("DELETE", `/api/runs/${id}`),
  metrics: (id: number, q: Query) => request<MetricsResponse>("GET", `/api/runs/${id}/metrics`, q),
  compare: (ids: number[]) => request<Comparison>("GET", "/api/compare", { ids: ids.join(",") }),
  groups: (by: string) => request<{ groups: Group[] }>("GET", "/api/groups", { by }),
  log: (id: number, maxBytes = 65536) => request<LogTail>("GET", `/api/runs/${id}/log`, { max_bytes: maxBytes }),
  alerts: (id: number) => request<RunAlerts>("GET", `/api/runs/${id}/alerts`),
};

// A link to a file route (CSV export) that carries the token as a query parameter, since a
// plain <a href> cannot send headers.
export function fileUrl(path: string, q: Query = {}): string {
  return path + buildQuery(token ? { ...q, token } : q);
}
