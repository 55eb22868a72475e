// One run: status and metadata, its alerts in Alertmanager (refreshed every 10 s), final
// metrics, metric curves (polled every 2 s while the run is running), system figures, config,
// data files, artifacts and the log tail.
import { api, ApiError, fileUrl, RunAlert, RunAlerts, RunDetail, Series } from "../api";
import { LineChart } from "../chart";
import { clear, errorBox, h, statusBadge } from "../dom";
import { fmtBytes, fmtNum, fmtTime, isSystemKey, runDuration } from "../format";
import type { Cleanup } from "../router";

const POLL_MS = 2000;
const ALERTS_POLL_MS = 10000;

// Only http(s) links from Alertmanager's data (an alert's generatorURL) become hrefs.
function safeHref(url: string): string | null {
  return /^https?:\/\//i.test(url) ? url : null;
}

function alertRow(a: RunAlert): HTMLElement {
  const sev = a.severity || "none";
  const since = Date.parse(a.starts_at);
  const state = a.state + (a.silenced_by.length ? " (silenced)" : a.inhibited_by.length ? " (inhibited)" : "");
  const href = safeHref(a.generator_url);
  return h(
    "tr",
    { "data-alert": a.name, "data-severity": sev, "data-state": a.state },
    h("td", {}, h("span", { class: `badge severity-${sev}` }, sev)),
    h("td", {}, href ? h("a", { href, target: "_blank", rel: "noopener noreferrer", title: "the rule's expression in Prometheus" }, a.name) : a.name),
    h("td", {}, state),
    h("td", { class: "summary" }, a.summary || "—", a.description ? h("div", { class: "alert-description" }, a.description) : null),
    h("td", {}, Number.isFinite(since) ? fmtTime(since / 1000) : "—"),
  );
}

function note(s: Series | undefined): string {
  if (!s) return "";
  return s.downsampled ? `${s.points.length} of ${s.total_points.toLocaleString()} points (min/max sampled)` : `${s.total_points.toLocaleString()} points`;
}

export async function renderRun(root: HTMLElement, _params: URLSearchParams, arg: string): Promise<Cleanup> {
  const id = Number(arg);
  if (!Number.isInteger(id) || id <= 0) throw new Error(`bad run id '${arg}'`);
  const t0 = performance.now();
  let detail: RunDetail = await api.run(id);
  const cache = new Map<string, Series>();
  const loadAll = async () => {
    const m = await api.metrics(id, { max_points: 1000 });
    for (const s of m.series) cache.set(s.key, s);
  };
  await loadAll();

  const title = h("h1", {}, detail.name, statusBadge(detail.status));
  const sub = h("div", { class: "sub" });
  const cards = h("div", { class: "cards", id: "final-cards" });
  const meta = h("dl", { class: "meta" });
  const trainGrid = h("div", { class: "grid", id: "run-charts" });
  const sysGrid = h("div", { class: "grid", id: "system-charts" });
  const alertsBox = h("div", { id: "run-alerts" });
  const logPre = h("pre", { id: "log-tail" });
  const logNote = h("div", { class: "hint" });
  const del = h("button", { class: "danger" }, "Delete run");
  del.addEventListener("click", async () => {
    if (!confirm(`Delete run ${id} (${detail.name}) and all its metrics? This cannot be undone.`)) return;
    try {
      await api.deleteRun(id);
      window.location.hash = "#/runs";
    } catch (e) {
      root.prepend(errorBox(e));
    }
  });

  root.append(
    h(
      "div",
      { class: "toolbar" },
      title,
      h("span", { class: "spacer" }),
      // A tune study, or one of its trials: the study page shows them together.
      detail.params["tune.metric"] !== undefined
        ? h("a", { href: `#/study/${id}`, id: "study-link" }, "Study page")
        : detail.tags.includes("tune") && detail.parent_id !== null
        ? h("a", { href: `#/study/${detail.parent_id}`, id: "study-link" }, "Study page")
        : null,
      h("a", { href: fileUrl(`/api/runs/${id}/metrics.csv`) }, "Metrics CSV"),
      del,
    ),
    sub,
    cards,
    h("h2", { id: "alerts-title" }, "Alerts"),
    alertsBox,
    h("h2", {}, "Metrics"),
    h("div", { class: "hint" }, "Drag to zoom (re-sampled on the server), double-click to reset."),
    trainGrid,
    h("h2", { id: "system-title" }, "System"),
    sysGrid,
    h(
      "div",
      { class: "two-col" },
      h("div", {}, h("h2", {}, "Run"), h("div", { class: "panel" }, meta)),
      h("div", {}, h("h2", {}, "Config"), h("pre", { id: "config" }, detail.config_yaml || "(no config recorded)")),
    ),
    h("h2", {}, "Data files"),
    h("div", { id: "data-files" }),
    h("h2", {}, "Artifacts"),
    h("div", { id: "artifacts" }),
    h("h2", {}, "Log"),
    logNote,
    logPre,
  );

  function renderMeta(): void {
    clear(title);
    title.append(detail.name, " ", statusBadge(detail.status));
    sub.textContent = `run ${detail.id} · started ${fmtTime(detail.start_time)} · ${runDuration(detail)}${detail.end_time ? "" : " so far"}${detail.status_message ? " · " + detail.status_message : ""}`;
    clear(cards);
    const finals = Object.entries(detail.final_metrics);
    if (finals.length === 0) cards.append(h("div", { class: "hint" }, "No final metrics yet."));
    for (const [k, v] of finals) cards.append(h("div", { class: "card" }, h("div", { class: "k" }, k), h("div", { class: "v" }, fmtNum(v))));
    clear(meta);
    const row = (k: string, v: Node | string) => [h("dt", {}, k), h("dd", {}, v)];
    meta.append(
      ...row("id", String(detail.id)),
      ...row("status", detail.status + (detail.status_message ? ` (${detail.status_message})` : "")),
      ...row("started", fmtTime(detail.start_time)),
      ...row("ended", fmtTime(detail.end_time)),
      ...row("last heartbeat", fmtTime(detail.heartbeat_time)),
      ...row("host", `${detail.host} (pid ${detail.pid})`),
      ...row("group", detail.group_id ? h("a", { href: `#/groups?by=group&id=${encodeURIComponent(detail.group_id)}` }, detail.group_id) : "—"),
      ...row("parent", detail.parent_id !== null ? h("a", { href: `#/run/${detail.parent_id}` }, String(detail.parent_id)) : "—"),
      ...row("git commit", detail.git_commit || "—"),
      ...row("tags", detail.tags.length ? h("span", {}, detail.tags.map((t) => h("a", { class: "tag", href: `#/runs?tag=${encodeURIComponent(t)}` }, t))) : "—"),
    );
    const files = document.getElementById("data-files")!;
    clear(files);
    files.append(
      detail.data_files.length === 0
        ? h("div", { class: "empty panel" }, "No data files recorded.")
        : h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              {},
              h("thead", {}, h("tr", {}, h("th", {}, "path"), h("th", { class: "num" }, "size"), h("th", {}, "fingerprint"))),
              h("tbody", {}, detail.data_files.map((f) => h("tr", {}, h("td", {}, f.path), h("td", { class: "num" }, fmtBytes(f.size_bytes)), h("td", {}, f.fingerprint)))),
            ),
          ),
    );
    const arts = document.getElementById("artifacts")!;
    clear(arts);
    arts.append(
      detail.artifacts.length === 0
        ? h("div", { class: "empty panel" }, "No artifacts.")
        : h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              {},
              h("thead", {}, h("tr", {}, h("th", {}, "kind"), h("th", {}, "path"), h("th", {}, "created"))),
              h("tbody", {}, detail.artifacts.map((a) => h("tr", {}, h("td", {}, a.kind), h("td", {}, a.path), h("td", {}, fmtTime(a.created_time))))),
            ),
          ),
    );
  }

  const charts = new Map<string, LineChart>();
  async function syncCharts(): Promise<void> {
    const fresh: LineChart[] = [];
    for (const k of detail.metric_keys) {
      if (charts.has(k.key)) continue;
      const key = k.key;
      const chart = new LineChart({
        title: key,
        labels: [key],
        load: async (range) => {
          if (!range) {
            const s = cache.get(key);
            return [s ? s.points.map((p) => p[0]) : [], s ? s.points.map((p) => p[1]) : []];
          }
          const m = await api.metrics(id, { key, max_points: 1000, min_step: range.min, max_step: range.max });
          const s = m.series[0];
          return [s.points.map((p) => p[0]), s.points.map((p) => p[1])];
        },
        note: (_d, range) => (range ? `steps ${range.min}–${range.max}` : note(cache.get(key))),
      });
      charts.set(key, chart);
      (isSystemKey(key) ? sysGrid : trainGrid).append(chart.el);
      fresh.push(chart);
    }
    if (trainGrid.childElementCount === 0) trainGrid.append(h("div", { class: "empty panel" }, "No metrics logged yet."));
    else trainGrid.querySelector(".empty")?.remove();
    const sysTitle = document.getElementById("system-title");
    if (sysTitle) sysTitle.style.display = sysGrid.childElementCount ? "" : "none";
    await Promise.all(fresh.map((c) => c.render()));
  }

  async function loadLog(): Promise<void> {
    try {
      const log = await api.log(id);
      logNote.textContent = `${log.path} · ${fmtBytes(log.size_bytes)}${log.truncated ? " · last 64 KiB" : ""}`;
      const atBottom = logPre.scrollTop + logPre.clientHeight >= logPre.scrollHeight - 4;
      logPre.textContent = log.text || "(empty)";
      if (atBottom) logPre.scrollTop = logPre.scrollHeight;
      logPre.style.display = "";
    } catch (e) {
      logNote.textContent = e instanceof ApiError && (e.status === 404 || e.status === 403) ? e.message : String(e);
      logPre.style.display = "none";
    }
  }

  // The run's alerts (GET /api/runs/{id}/alerts): a note without an Alertmanager, the error when
  // it cannot be asked (the rest of the page is unaffected), else one row per alert.
  async function loadAlerts(): Promise<void> {
    let r: RunAlerts;
    try {
      r = await api.alerts(id);
    } catch (e) {
      clear(alertsBox);
      alertsBox.dataset.state = "error";
      alertsBox.dataset.count = "0";
      alertsBox.append(h("div", { class: "error", id: "alerts-error" }, "Alerts: " + (e instanceof Error ? e.message : String(e))));
      return;
    }
    clear(alertsBox);
    alertsBox.dataset.count = String(r.alerts.length);
    if (r.alertmanager === null) {
      alertsBox.dataset.state = "off";
      alertsBox.append(h("div", { class: "hint", id: "alerts-note" }, r.note ?? "No Alertmanager configured."));
      return;
    }
    if (r.alerts.length === 0) {
      alertsBox.dataset.state = "none";
      alertsBox.append(h("div", { class: "empty panel" }, `No alerts for run ${id} in Alertmanager (${r.alertmanager}).`));
      return;
    }
    alertsBox.dataset.state = "alerts";
    alertsBox.append(
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "alerts-table" },
          h("thead", {}, h("tr", {}, h("th", {}, "severity"), h("th", {}, "alert"), h("th", {}, "state"), h("th", {}, "summary"), h("th", {}, "since"))),
          h("tbody", {}, r.alerts.map(alertRow)),
        ),
      ),
      h("div", { class: "hint" }, `From Alertmanager at ${r.alertmanager}; refreshed every ${ALERTS_POLL_MS / 1000} s.`),
    );
  }

  renderMeta();
  await syncCharts();
  root.dataset.renderMs = (performance.now() - t0).toFixed(1);
  await loadLog();
  void loadAlerts();
  const alertsTimer = window.setInterval(() => void loadAlerts(), ALERTS_POLL_MS);

  let timer = 0;
  let disposed = false;
  const poll = async () => {
    if (disposed) return;
    try {
      detail = await api.run(id);
      await loadAll();
      renderMeta();
      await syncCharts();
      await Promise.all([...charts.values()].map((c) => c.refresh()));
      await loadLog();
    } catch (e) {
      console.warn("poll failed", e);
    }
    if (!disposed && detail.status === "running") timer = window.setTimeout(poll, POLL_MS);
  };
  if (detail.status === "running") timer = window.setTimeout(poll, POLL_MS);
  root.dataset.live = detail.status === "running" ? "1" : "0";
  return () => {
    disposed = true;
    clearTimeout(timer);
    clearInterval(alertsTimer);
    charts.forEach((c) => c.destroy());
  };
}
