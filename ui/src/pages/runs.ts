// Runs table: sort by any column, filter by status / tag / final-metric threshold, search by
// name or config value (key=value), user-chosen columns (kept in localStorage), paging, and a
// selection to compare (2..10 runs).
import { api, fileUrl, Query, Run, RunList } from "../api";
import { clear, errorBox, h, statusBadge } from "../dom";
import { fmtNum, fmtTime, runDuration } from "../format";
import { type Cleanup, setHashParams } from "../router";

const COLUMNS_KEY = "rectrain.runs.columns";
const PAGE = 100;

interface Column {
  id: string;
  label: string;
  sort?: string; // Server sort key.
  num?: boolean;
  cell: (r: Run) => Node | string;
}

const BASE_COLUMNS: Column[] = [
  { id: "id", label: "ID", sort: "id", num: true, cell: (r) => String(r.id) },
  { id: "name", label: "Name", sort: "name", cell: (r) => h("a", { href: `#/run/${r.id}`, class: "run-link" }, r.name) },
  { id: "status", label: "Status", sort: "status", cell: (r) => statusBadge(r.status) },
  { id: "start_time", label: "Started", sort: "start_time", cell: (r) => fmtTime(r.start_time) },
  { id: "end_time", label: "Ended", sort: "end_time", cell: (r) => fmtTime(r.end_time) },
  { id: "duration", label: "Duration", num: true, cell: (r) => runDuration(r) },
  { id: "tags", label: "Tags", cell: (r) => h("span", {}, r.tags.map((t) => h("span", { class: "tag", "data-tag": t, title: "filter by this tag" }, t))) },
  { id: "group", label: "Group", cell: (r) => (r.group_id ? h("a", { href: `#/groups?by=group&id=${encodeURIComponent(r.group_id)}` }, r.group_id) : "") },
  { id: "parent", label: "Parent", cell: (r) => (r.parent_id !== null ? h("a", { href: `#/run/${r.parent_id}` }, String(r.parent_id)) : "") },
  { id: "host", label: "Host", cell: (r) => r.host },
];

function columnFor(id: string): Column | null {
  const base = BASE_COLUMNS.find((c) => c.id === id);
  if (base) return base;
  if (id.startsWith("metric:")) {
    const key = id.slice(7);
    return { id, label: key, sort: id, num: true, cell: (r) => fmtNum(r.final_metrics[key]) };
  }
  if (id.startsWith("param:")) {
    const key = id.slice(6);
    return { id, label: key, sort: id, cell: (r) => r.params?.[key] ?? "" };
  }
  return null;
}

function loadColumns(): string[] | null {
  try {
    const v = JSON.parse(localStorage.getItem(COLUMNS_KEY) ?? "null");
    return Array.isArray(v) && v.every((x) => typeof x === "string") ? v : null;
  } catch {
    return null;
  }
}

// Search text: "key=value" tokens filter on config params (exact), the rest on the name.
function parseSearch(text: string): { name: string; params: string[] } {
  const params: string[] = [];
  const words: string[] = [];
  for (const tok of text.trim().split(/\s+/)) {
    if (!tok) continue;
    if (/^[^=<>!]+=[^=]/.test(tok)) params.push(tok);
    else words.push(tok);
  }
  return { name: words.join(" "), params };
}

export function renderRuns(root: HTMLElement, params: URLSearchParams): Cleanup {
  const state = {
    search: params.get("search") ?? "",
    status: params.get("status") ?? "",
    tags: params.getAll("tag"),
    metric: params.get("metric") ?? "",
    sort: params.get("sort") ?? "start_time",
    order: params.get("order") ?? "desc",
    offset: Number(params.get("offset") ?? 0) || 0,
  };
  const selected = new Set<number>((params.get("sel") ?? "").split(",").filter(Boolean).map(Number));
  let chosen = loadColumns();
  let last: RunList | null = null;
  let timer = 0;
  let seq = 0;
  let disposed = false;

  const search = h("input", { type: "search", placeholder: "Search name, or config key=value…", value: state.search, id: "search" });
  const status = h(
    "select",
    { id: "status-filter" },
    ["", "running", "finished", "failed", "stopped"].map((s) => h("option", { value: s }, s || "any status")),
  );
  status.value = state.status;
  const tagInput = h("input", { type: "text", placeholder: "tag", size: 10, id: "tag-filter", value: state.tags.join(",") });
  const metricInput = h("input", { type: "text", placeholder: "metric, e.g. auc>=0.8", size: 18, id: "metric-filter", value: state.metric });
  const compareBtn = h("button", { class: "primary", id: "compare-btn" });
  const columnsBtn = h("button", { id: "columns-btn" }, "Columns");
  const exportLink = h("a", { class: "hint", id: "export-csv" }, "Export CSV");
  const info = h("div", { class: "sub", id: "runs-info" });
  const tableHost = h("div", { class: "table-wrap" });
  const pager = h("div", { class: "pager" });
  const errorHost = h("div");

  root.append(
    h("h1", {}, "Runs"),
    info,
    h(
      "div",
      { class: "toolbar" },
      search,
      status,
      tagInput,
      metricInput,
      h("button", { onclick: () => applyFilters() }, "Apply"),
      h("span", { class: "spacer" }),
      exportLink,
      columnsBtn,
      compareBtn,
    ),
    errorHost,
    tableHost,
    pager,
  );

  function query(): Query {
    const s = parseSearch(state.search);
    const metrics = state.metric.split(",").map((m) => m.trim()).filter(Boolean);
    return {
      q: s.name,
      param: s.params,
      status: state.status,
      tag: state.tags,
      metric: metrics,
      sort: state.sort,
      order: state.order,
      offset: state.offset,
      limit: PAGE,
    };
  }

  function syncHash(): void {
    const p = new URLSearchParams();
    if (state.search) p.set("search", state.search);
    if (state.status) p.set("status", state.status);
    for (const t of state.tags) p.append("tag", t);
    if (state.metric) p.set("metric", state.metric);
    if (state.sort !== "start_time") p.set("sort", state.sort);
    if (state.order !== "desc") p.set("order", state.order);
    if (state.offset) p.set("offset", String(state.offset));
    setHashParams(p);
  }

  function applyFilters(): void {
    state.search = search.value;
    state.status = status.value;
    state.tags = tagInput.value.split(",").map((t) => t.trim()).filter(Boolean);
    state.metric = metricInput.value;
    state.offset = 0;
    void load();
  }

  for (const el of [search, tagInput, metricInput]) {
    el.addEventListener("keydown", (e) => {
      if (e.key === "Enter") applyFilters();
    });
  }
  let searchTimer = 0;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = window.setTimeout(applyFilters, 300);
  });
  status.addEventListener("change", applyFilters);

  function activeColumns(list: RunList): Column[] {
    let ids = chosen;
    if (!ids) {
      const metricKeys = new Set<string>();
      for (const r of list.runs) Object.keys(r.final_metrics).forEach((k) => metricKeys.add(k));
      ids = ["id", "name", "status", "start_time", "duration", "tags", ...[...metricKeys].sort().slice(0, 5).map((k) => "metric:" + k)];
    }
    return ids.map(columnFor).filter((c): c is Column => c !== null);
  }

  function updateCompare(): void {
    compareBtn.textContent = `Compare (${selected.size})`;
    compareBtn.disabled = selected.size < 2 || selected.size > 10;
    compareBtn.title = selected.size > 10 ? "compare at most 10 runs" : "select 2 to 10 runs";
  }
  compareBtn.addEventListener("click", () => {
    window.location.hash = `#/compare?ids=${[...selected].join(",")}`;
  });

  function renderTable(list: RunList): void {
    const cols = activeColumns(list);
    const head = h(
      "tr",
      {},
      h("th", {}, ""),
      cols.map((c) => {
        const active = c.sort !== undefined && c.sort === state.sort;
        const th = h(
          "th",
          { class: (c.sort ? "sortable " : "") + (c.num ? "num" : ""), "data-col": c.id, title: c.sort ? "sort" : undefined },
          c.label,
          active ? h("span", { class: "arrow" }, state.order === "desc" ? "▼" : "▲") : null,
        );
        if (c.sort) {
          th.addEventListener("click", () => {
            if (state.sort === c.sort) state.order = state.order === "desc" ? "asc" : "desc";
            else {
              state.sort = c.sort!;
              state.order = c.id === "name" ? "asc" : "desc";
            }
            state.offset = 0;
            void load();
          });
        }
        return th;
      }),
    );
    const body = h(
      "tbody",
      {},
      list.runs.map((r) => {
        const box = h("input", { type: "checkbox", checked: selected.has(r.id), "aria-label": `select run ${r.id}` });
        const tr = h(
          "tr",
          { "data-run-id": r.id, class: selected.has(r.id) ? "selected" : "" },
          h("td", {}, box),
          cols.map((c) => h("td", { class: c.num ? "num" : "" }, c.cell(r))),
        );
        box.addEventListener("change", () => {
          if (box.checked) selected.add(r.id);
          else selected.delete(r.id);
          tr.classList.toggle("selected", box.checked);
          updateCompare();
        });
        return tr;
      }),
    );
    body.addEventListener("click", (e) => {
      const t = (e.target as HTMLElement).closest<HTMLElement>("[data-tag]");
      if (!t) return;
      const tag = t.dataset.tag!;
      if (!state.tags.includes(tag)) state.tags.push(tag);
      tagInput.value = state.tags.join(",");
      state.offset = 0;
      void load();
    });
    clear(tableHost);
    if (list.runs.length === 0) {
      tableHost.append(h("div", { class: "empty" }, "No runs match these filters."));
    } else {
      tableHost.append(h("table", { class: "runs", id: "runs-table" }, h("thead", {}, head), body));
    }
    clear(pager);
    const from = list.total === 0 ? 0 : state.offset + 1;
    const to = state.offset + list.runs.length;
    const prev = h("button", { disabled: state.offset === 0 }, "‹ Prev");
    const next = h("button", { disabled: to >= list.total, id: "next-page" }, "Next ›");
    prev.addEventListener("click", () => {
      state.offset = Math.max(0, state.offset - PAGE);
      void load();
    });
    next.addEventListener("click", () => {
      state.offset += PAGE;
      void load();
    });
    pager.append(prev, next, h("span", {}, `${from}–${to} of ${list.total}`));
  }

  async function load(): Promise<void> {
    const mySeq = ++seq;
    clearTimeout(timer);
    syncHash();
    const q = query();
    const paramCols = (chosen ?? []).filter((c) => c.startsWith("param:")).map((c) => c.slice(6));
    if (paramCols.length) q.include_params = paramCols.join(",");
    const started = performance.now();
    try {
      const list = await api.runs(q);
      if (mySeq !== seq || disposed) return;
      last = list;
      clear(errorHost);
      renderTable(list);
      const ms = performance.now() - started;
      info.textContent = `${list.total} run${list.total === 1 ? "" : "s"} match · loaded in ${ms.toFixed(0)} ms`;
      root.dataset.renderMs = ms.toFixed(1);
      exportLink.setAttribute("href", fileUrl("/api/runs.csv", { ...q, limit: 10000, offset: 0 }));
      updateCompare();
      if (list.runs.some((r) => r.status === "running")) timer = window.setTimeout(() => void load(), 5000);
    } catch (e) {
      if (mySeq !== seq || disposed) return;
      clear(errorHost);
      errorHost.append(errorBox(e));
    }
  }

  // Column chooser: base columns, every final metric and config key seen on this page.
  let popover: HTMLElement | null = null;
  columnsBtn.addEventListener("click", async (e) => {
    e.stopPropagation();
    if (popover) {
      popover.remove();
      popover = null;
      return;
    }
    let paramKeys: string[] = [];
    try {
      const withParams = await api.runs({ ...query(), include_params: "all" });
      const keys = new Set<string>();
      withParams.runs.forEach((r) => Object.keys(r.params ?? {}).forEach((k) => keys.add(k)));
      paramKeys = [...keys].sort();
    } catch {
      /* offer what we know */
    }
    const metricKeys = new Set<string>();
    last?.runs.forEach((r) => Object.keys(r.final_metrics).forEach((k) => metricKeys.add(k)));
    const current = new Set((last ? activeColumns(last) : []).map((c) => c.id));
    const box = (id: string, label: string) => {
      const cb = h("input", { type: "checkbox", checked: current.has(id), "data-col": id });
      cb.addEventListener("change", () => {
        if (cb.checked) current.add(id);
        else current.delete(id);
        const order = [...BASE_COLUMNS.map((c) => c.id), ...[...metricKeys].sort().map((k) => "metric:" + k), ...paramKeys.map((k) => "param:" + k)];
        chosen = order.filter((c) => current.has(c));
        localStorage.setItem(COLUMNS_KEY, JSON.stringify(chosen));
        void load();
      });
      return h("label", {}, cb, " ", label);
    };
    const r = columnsBtn.getBoundingClientRect();
    popover = h(
      "div",
      { class: "popover", id: "columns-popover", style: `top:${r.bottom + window.scrollY + 4}px; right:${Math.max(8, window.innerWidth - r.right)}px` },
      h("h4", {}, "Run"),
      BASE_COLUMNS.map((c) => box(c.id, c.label)),
      h("h4", {}, "Final metrics"),
      metricKeys.size ? [...metricKeys].sort().map((k) => box("metric:" + k, k)) : h("div", { class: "hint" }, "none on this page"),
      h("h4", {}, "Config"),
      paramKeys.length ? paramKeys.map((k) => box("param:" + k, k)) : h("div", { class: "hint" }, "none on this page"),
      h(
        "div",
        { style: "margin-top:8px" },
        h(
          "button",
          {
            onclick: () => {
              chosen = null;
              localStorage.removeItem(COLUMNS_KEY);
              popover?.remove();
              popover = null;
              void load();
            },
          },
          "Reset to defaults",
        ),
      ),
    );
    popover.addEventListener("click", (ev) => ev.stopPropagation());
    document.body.append(popover);
  });
  const closePopover = () => {
    popover?.remove();
    popover = null;
  };
  document.addEventListener("click", closePopover);

  updateCompare();
  void load();
  return () => {
    disposed = true;
    clearTimeout(timer);
    clearTimeout(searchTimer);
    document.removeEventListener("click", closePopover);
    closePopover();
  };
}
