// Browser end-to-end test of the rectrain web UI: Debian's chromium driven by playwright-core
// (no browser download). Seeds a tracking store with ui_seed_store, starts rectrain_ui_server
// on a free loopback port, and drives the UI like a user. Screenshots and figures go to --out.
//
//   node e2e.mjs --suite demo|scale --server BIN [--server-arg ui] --seed BIN --out DIR
// (--server-arg: a first argument for BIN, e.g. `--server build/rectrain --server-arg ui` to
// test `rectrain ui` itself; without it BIN is rectrain_ui_server).
//
// demo:  runs table, filters (status, tag, metric threshold, config search), chosen columns
//        kept across reloads, sort, compare two runs (curves drawn, config diff, finals),
//        live run page (curve grows while a writer appends), log tail, groups page scatter,
//        the run page's alerts from a real Alertmanager (Debian's prometheus-alertmanager, alerts
//        posted to its API; skipped without it) and its error once Alertmanager is gone, token
//        auth. Fails on any page error.
// scale: 10,000 runs + a run with 1,000,000 points; times the first render of the runs
//        table, a metric sort, the big curve and a zoom; each must stay under 10 s.
// study: a real `rectrain tune` study (--rectrain BIN, --trials N, default 12) on generated
//        data, watched live on its study page: the trial table grows while it runs; at the
//        end the best value equals the tuner's tune/best, the parallel coordinates draw one
//        line per trial, the rungs table counts them, the best-so-far curve is drawn, sorting
//        by the metric puts the best first, and a trial's run page links back. Times the
//        study page's render (under 10 s; `--trials 200` is the responsiveness benchmark).
// Exit codes: 0 pass, 1 fail, 77 skipped (no chromium).
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const suite = args.suite ?? "demo";
const serverPrefix = args["server-arg"] ? [args["server-arg"]] : [];
const CHROMIUM = process.env.RECTRAIN_CHROMIUM ?? "/usr/bin/chromium";
const ALERTMANAGER = process.env.RECTRAIN_ALERTMANAGER ?? "/usr/bin/prometheus-alertmanager";
const BOUND_MS = 10000;
for (const k of ["server", "seed", "out"]) {
  if (!args[k]) {
    console.error(`e2e.mjs: missing --${k}`);
    process.exit(2);
  }
}
if (!existsSync(CHROMIUM)) {
  console.log(`SKIP: ${CHROMIUM} not found; install Debian's chromium (scripts/install_deps.sh)`);
  process.exit(77);
}
mkdirSync(args.out, { recursive: true });

const work = mkdtempSync(join(tmpdir(), `rectrain-ui-${suite}-`));
const store = join(work, "ws", "rectrain.db");
mkdirSync(join(work, "ws"), { recursive: true });
const children = [];
const figures = { suite };
let context = null;
let page = null;
const pageErrors = [];

function seed(...rest) {
  const out = execFileSync(args.seed, ["--store", store, ...rest], { encoding: "utf8", maxBuffer: 1 << 20 });
  return JSON.parse(out.trim().split("\n").pop());
}

function startServer(extra = []) {
  return new Promise((resolve, reject) => {
    const p = spawn(args.server, [...serverPrefix, "--store", store, "--port", "0", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(p);
    let out = "";
    const timer = setTimeout(() => reject(new Error(`server did not print its URL in 20 s: ${out}`)), 20000);
    p.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/ at (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ proc: p, url: m[1] });
      }
    });
    p.stderr.on("data", (d) => (out += d));
    p.on("exit", (code) => {
      clearTimeout(timer);
      if (!out.match(/ at (http:\/\/\S+)/)) reject(new Error(`server exited with ${code}: ${out}`));
    });
  });
}

async function stopServer(s) {
  if (s.proc.exitCode !== null) return;
  const done = new Promise((r) => s.proc.on("exit", r));
  s.proc.kill("SIGTERM");
  await done;
  if (s.proc.exitCode !== 0) throw new Error(`server exited with ${s.proc.exitCode} on SIGTERM`);
}

function assert(cond, msg) {
  if (!cond) throw new Error("assertion failed: " + msg);
}

let stepNo = 0;
async function step(name, fn) {
  const t0 = Date.now();
  stepNo++;
  try {
    await fn();
    console.log(`ok ${stepNo} - ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    console.log(`not ok ${stepNo} - ${name}: ${e.message}`);
    if (page) await page.screenshot({ path: join(args.out, `${suite}-failure.png`), fullPage: true }).catch(() => {});
    throw e;
  }
}

const rows = () => page.locator("#runs-table tbody tr");
async function waitRows(n) {
  await page.waitForFunction((n) => document.querySelectorAll("#runs-table tbody tr").length === n || (n === 0 && document.querySelector(".empty")), n, { timeout: 10000 });
}
async function shot(name) {
  const path = join(args.out, name);
  await page.screenshot({ path, fullPage: true });
  console.log(`# screenshot ${path}`);
}
// Counts non-background pixels of a chart's canvas: > 0 means lines were drawn.
async function inkedPixels(chartSel) {
  return page.evaluate((sel) => {
    const c = document.querySelector(sel + " canvas");
    if (!c || c.width === 0 || c.height === 0) return -1;
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const [r, g, b, a] = [d[i], d[i + 1], d[i + 2], d[i + 3]];
      if (a > 0 && !(r > 240 && g > 240 && b > 240)) n++;
    }
    return n;
  }, chartSel);
}
async function dragZoom(chartSel, fromFrac, toFrac) {
  const box = await page.locator(chartSel + " .u-over").boundingBox();
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width * fromFrac, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * ((fromFrac + toFrac) / 2), y, { steps: 4 });
  await page.mouse.move(box.x + box.width * toFrac, y, { steps: 4 });
  await page.mouse.up();
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitFor(what, seconds, probe) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      if (await probe()) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Debian's Alertmanager on a free loopback port (no clustering, its own storage).
async function startAlertmanager() {
  const port = await freePort();
  const dir = join(work, `am-${port}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "am.yml"), "route: {receiver: blackhole}\nreceivers: [{name: blackhole}]\n");
  const p = spawn(ALERTMANAGER, [`--config.file=${join(dir, "am.yml")}`, `--storage.path=${dir}`, `--web.listen-address=127.0.0.1:${port}`, "--cluster.listen-address=", "--log.level=warn"], { stdio: "ignore" });
  children.push(p);
  const url = `http://127.0.0.1:${port}`;
  await waitFor("alertmanager ready", 20, async () => (await fetch(url + "/-/ready")).ok);
  return { proc: p, url };
}

async function demo() {
  const info = seed("demo");
  const server = await startServer();
  const base = server.url.replace(/\/$/, "");
  figures.url = server.url;

  await step("runs table lists every run", async () => {
    await page.goto(server.url);
    await waitRows(info.total);
    const headers = await page.locator("#runs-table thead th").allTextContents();
    assert(headers.some((t) => t.startsWith("val/auc")), `val/auc column in ${headers}`);
    await shot("runs.png");
  });
  await step("filter by status", async () => {
    await page.selectOption("#status-filter", "failed");
    await waitRows(1);
    assert((await rows().first().textContent()).includes("diverged"), "the failed run is listed");
    await page.selectOption("#status-filter", "");
    await waitRows(info.total);
  });
  await step("filter by tag", async () => {
    await page.fill("#tag-filter", "baseline");
    await page.press("#tag-filter", "Enter");
    await waitRows(2);
    await page.fill("#tag-filter", "");
    await page.press("#tag-filter", "Enter");
    await waitRows(info.total);
  });
  await step("filter by final-metric threshold", async () => {
    await page.fill("#metric-filter", "val/auc>=0.78");
    await page.press("#metric-filter", "Enter");
    await waitRows(2);
    await page.fill("#metric-filter", "");
    await page.press("#metric-filter", "Enter");
    await waitRows(info.total);
  });
  await step("search by config value", async () => {
    await page.fill("#search", "model.name=dcn");
    await page.press("#search", "Enter");
    await waitRows(1);
    assert((await rows().first().textContent()).includes("baseline-dcn"), "dcn run found");
    await page.goto(base + "/#/runs");
    await waitRows(info.total);
  });
  await step("chosen columns persist across reloads", async () => {
    await page.click("#columns-btn");
    await page.waitForSelector("#columns-popover input[data-col='param:optimizer.lr']");
    await page.check("#columns-popover input[data-col='param:optimizer.lr']");
    await page.waitForSelector("#runs-table th[data-col='param:optimizer.lr']");
    await page.reload();
    await waitRows(info.total);
    await page.waitForSelector("#runs-table th[data-col='param:optimizer.lr']", { timeout: 5000 });
  });
  await step("sort by a final metric", async () => {
    await page.click("#runs-table th[data-col='metric:val/auc']");
    await page.waitForFunction((id) => document.querySelector("#runs-table tbody tr")?.dataset.runId === String(id), info.trials[2], { timeout: 10000 });
  });
  await step("compare two runs: curves overlaid, config diff, finals", async () => {
    await page.check(`#runs-table tr[data-run-id='${info.trials[0]}'] input[type=checkbox]`);
    await page.check(`#runs-table tr[data-run-id='${info.trials[2]}'] input[type=checkbox]`);
    await page.click("#compare-btn");
    await page.waitForSelector("#compare-charts .chart[data-points] canvas");
    const loss = "#compare-charts .chart[data-title='train/loss']";
    await page.waitForSelector(loss + "[data-points]");
    assert((await page.getAttribute(loss, "data-series")) === "2", "two lines on train/loss");
    const box = await page.locator(loss + " canvas").boundingBox();
    assert(box && box.width > 200 && box.height > 100, `canvas size ${JSON.stringify(box)}`);
    const ink = await inkedPixels(loss);
    assert(ink > 500, `curves drawn (${ink} inked pixels)`);
    figures.compare_inked_pixels = ink;
    const charts = await page.locator("#compare-charts .chart").count();
    assert(charts >= 5, `one chart per metric key (${charts})`);
    const diffKeys = await page.locator("#config-diff tbody tr td:first-child").allTextContents();
    assert(diffKeys.includes("optimizer.lr"), `lr differs: ${diffKeys}`);
    assert(!diffKeys.includes("model.name"), `equal keys hidden: ${diffKeys}`);
    const finals = await page.locator("#final-metrics tbody tr td:first-child").allTextContents();
    assert(finals.includes("val/auc"), `finals side by side: ${finals}`);
    assert((await page.locator("#final-metrics td.best").count()) >= 1, "best value highlighted");
    await shot("compare.png");
  });
  await step("run page updates live while the run is running", async () => {
    await page.goto(`${base}/#/run/${info.live}`);
    const loss = "#run-charts .chart[data-title='train/loss']";
    await page.waitForSelector(loss + "[data-points]");
    const before = Number(await page.getAttribute(loss, "data-points"));
    const writer = spawn(args.seed, ["--store", store, "append", String(info.live), "--steps", "40", "--interval-ms", "100"], { stdio: "ignore" });
    children.push(writer);
    await page.waitForFunction(
      ([sel, n]) => Number(document.querySelector(sel)?.dataset.points ?? 0) > n,
      [loss, before],
      { timeout: 15000 },
    );
    figures.live_points_before = before;
    figures.live_points_after = Number(await page.getAttribute(loss, "data-points"));
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.includes("epoch 0 step"), "#log-tail", { timeout: 5000 });
    // No Alertmanager given to this server: the alerts panel says so.
    await page.waitForSelector("#run-alerts[data-state='off']", { timeout: 5000 });
    assert((await page.locator("#alerts-note").textContent()).includes("no Alertmanager configured"), "alerts note shown");
    assert((await page.locator("#system-charts .chart").count()) === 2, "system figures charted");
    assert((await page.locator("#data-files").textContent()).includes("criteo_day1.tsv"), "data files listed");
    assert((await page.locator("#config").textContent()).includes("embedding_dim: 32"), "config shown");
    await new Promise((r) => writer.on("exit", r));
    await shot("run.png");
  });
  await step("groups page plots a param against a metric", async () => {
    await page.goto(`${base}/#/groups`);
    await page.waitForSelector("#groups-table");
    assert((await page.locator("#groups-table").textContent()).includes("study-lr"), "study group listed");
    await page.click("#groups-table a");
    await page.waitForSelector("#group-plot .chart canvas");
    assert((await page.inputValue("#group-param")) === "optimizer.lr", "varying param chosen first");
    assert((await page.getAttribute("#group-plot .chart", "data-points")) === "5", "one point per trial");
    await page.waitForFunction(() => document.querySelectorAll("#group-runs tbody tr").length === 5);
    await shot("groups.png");
    await page.goto(`${base}/#/groups?by=parent`);
    await page.waitForSelector("#groups-table");
    assert((await page.locator("#groups-table tbody tr").count()) === 1, "one parent group");
  });
  await stopServer(server);

  if (!existsSync(ALERTMANAGER)) {
    console.log(`# skipped: the alerts panel with a real Alertmanager (${ALERTMANAGER} not found; scripts/install_deps.sh installs it)`);
  } else {
    await step("run page shows the run's alerts from a real Alertmanager; its error once it is gone", async () => {
      const am = await startAlertmanager();
      // What Prometheus sends for deploy/prometheus/alerts.yml, posted straight to Alertmanager.
      const alerts = [
        { labels: { alertname: "RectrainDataWaitHigh", severity: "warning", component: "train", run: String(info.live) }, annotations: { summary: `Run ${info.live} waits for data 40% of the time` } },
        {
          labels: { alertname: "RectrainTrainLossNaN", severity: "critical", component: "train", run: String(info.live) },
          annotations: { summary: `Training loss of run ${info.live} is NaN: training diverged`, description: "lower optimizer.lr" },
          generatorURL: "http://127.0.0.1:9090/graph",
        },
        { labels: { alertname: "RectrainTrainLossSpike", severity: "warning", run: String(info.trials[0]) }, annotations: { summary: "another run's alert" } },
      ];
      const post = await fetch(am.url + "/api/v2/alerts", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(alerts) });
      assert(post.ok, `POST /api/v2/alerts: HTTP ${post.status}`);
      await waitFor("alertmanager lists the alerts", 10, async () => (await (await fetch(am.url + "/api/v2/alerts")).json()).length === 3);
      const s = await startServer(["--alertmanager", am.url]);
      const b = s.url.replace(/\/$/, "");
      await page.goto(`${b}/#/run/${info.live}`);
      await page.waitForSelector("#alerts-table tbody tr[data-alert='RectrainTrainLossNaN']", { timeout: 10000 });
      const names = await page.locator("#alerts-table tbody tr").evaluateAll((trs) => trs.map((tr) => tr.dataset.alert));
      assert(JSON.stringify(names) === JSON.stringify(["RectrainTrainLossNaN", "RectrainDataWaitHigh"]), `the run's two alerts, critical first: ${names}`);
      const first = page.locator("#alerts-table tbody tr").first();
      assert((await first.locator(".badge").textContent()) === "critical", "severity badge");
      assert((await first.textContent()).includes(`Training loss of run ${info.live} is NaN`), "summary shown");
      assert((await first.textContent()).includes("lower optimizer.lr"), "description shown");
      assert((await first.locator("a").getAttribute("href")) === "http://127.0.0.1:9090/graph", "links the rule in Prometheus");
      await shot("run-alerts.png");
      await page.goto(`${b}/#/run/${info.trials[1]}`);
      await page.waitForSelector("#run-alerts[data-state='none']", { timeout: 10000 });
      // Alertmanager gone: the panel shows why, the rest of the page still renders.
      const exited = new Promise((r) => am.proc.on("exit", r));
      am.proc.kill("SIGTERM");
      await exited;
      await page.goto(`${b}/#/run/${info.live}`);
      await page.waitForSelector("#alerts-error", { timeout: 15000 });
      assert((await page.locator("#alerts-error").textContent()).includes("cannot reach Alertmanager at " + am.url), "unreachable Alertmanager named");
      await page.waitForSelector("#run-charts .chart[data-points]");
      await stopServer(s);
    });
  }

  await step("token: API calls carry it; without it the API refuses", async () => {
    const token = "0123456789abcdef0123";
    const s = await startServer(["--token", token]);
    assert(s.url.includes("?token=" + token), `URL carries the token: ${s.url}`);
    await page.goto(s.url);
    await waitRows(info.total);
    await page.goto(s.url.replace(/\?token=.*/, ""));
    await page.waitForSelector(".error");
    assert((await page.locator(".error").textContent()).includes("missing or wrong token"), "401 shown");
    await stopServer(s);
  });
}

async function scale() {
  const info = seed("scale", "--runs", "10000", "--points", "1000000");
  figures.seed_s = info.seed_s;
  const server = await startServer();
  const base = server.url.replace(/\/$/, "");
  await step("runs table over 10,001 runs renders", async () => {
    const t0 = Date.now();
    await page.goto(server.url);
    await waitRows(100);
    figures.runs_table_first_render_ms = Date.now() - t0;
    assert((await page.locator("#runs-info").textContent()).includes("10001 runs"), "total shown");
    assert(figures.runs_table_first_render_ms < BOUND_MS, `first render ${figures.runs_table_first_render_ms} ms`);
  });
  await step("sort 10,001 runs by a final metric", async () => {
    const first = await rows().first().getAttribute("data-run-id");
    const t0 = Date.now();
    await page.click("#runs-table th[data-col='metric:val/auc']");
    await page.waitForFunction((f) => document.querySelector("#runs-table tbody tr")?.dataset.runId !== f, first, { timeout: BOUND_MS });
    figures.sort_by_metric_ms = Date.now() - t0;
    const t1 = Date.now();
    await page.click("#next-page");
    await page.waitForFunction(() => document.querySelector(".pager")?.textContent.includes("101–200"), null, { timeout: BOUND_MS });
    figures.next_page_ms = Date.now() - t1;
    await shot("scale-runs.png");
  });
  const chart = "#run-charts .chart[data-title='train/loss']";
  await step("a 1,000,000-point curve renders (downsampled on the server)", async () => {
    const t0 = Date.now();
    await page.goto(`${base}/#/run/${info.big}`);
    await page.waitForSelector(chart + "[data-points] canvas", { timeout: BOUND_MS * 2 });
    figures.big_curve_first_render_ms = Date.now() - t0;
    const pts = Number(await page.getAttribute(chart, "data-points"));
    figures.big_curve_points_drawn = pts;
    assert(pts > 500 && pts <= 1000, `downsampled to ${pts} points`);
    assert((await page.locator(chart + " .chart-note").textContent()).includes("of 1,000,000 points"), "note names the total");
    const ink = await inkedPixels(chart);
    assert(ink > 500, `curve drawn (${ink} inked pixels)`);
    const max = await page.evaluate(async (id) => {
      const r = await fetch(`/api/runs/${id}/metrics?key=train/loss&max_points=1000`);
      const j = await r.json();
      return Math.max(...j.series[0].points.map((p) => p[1]));
    }, info.big);
    assert(max > 0.9, `the one-step spike survives downsampling (max ${max})`);
    assert(figures.big_curve_first_render_ms < BOUND_MS, `big curve ${figures.big_curve_first_render_ms} ms`);
  });
  await step("zooming re-samples the range on the server", async () => {
    const t0 = Date.now();
    await dragZoom(chart, 0.45, 0.55);
    await page.waitForFunction((sel) => document.querySelector(sel + " .chart-note")?.textContent.startsWith("steps "), chart, { timeout: BOUND_MS });
    await page.waitForFunction((sel) => Number(document.querySelector(sel)?.dataset.points) > 500, chart, { timeout: BOUND_MS });
    figures.zoom_refetch_ms = Date.now() - t0;
    figures.zoom_note = await page.locator(chart + " .chart-note").textContent();
    await shot("scale-run-zoomed.png");
  });
  await stopServer(server);
}

function run(bin, argv, opts = {}) {
  return execFileSync(bin, argv, { encoding: "utf8", maxBuffer: 1 << 24, ...opts });
}

async function study() {
  const B = args.rectrain;
  assert(B, "the study suite needs --rectrain BIN");
  const trials = Number(args.trials ?? 12);
  const dir = join(work, "study");
  mkdirSync(dir, { recursive: true });
  // The small study trains long enough (top-rung trials ~0.5 s) for polls to see trials run.
  const small = trials < 100;
  const trainRows = small ? 100000 : 12000;
  run(B, ["data", "gen", "--rows", String(trainRows), "--out", join(dir, "tr.tsv"), "--seed", "1"]);
  run(B, ["data", "gen", "--rows", "4000", "--out", join(dir, "va.tsv"), "--seed", "2"]);
  writeFileSync(
    join(dir, "base.yaml"),
    `threads: 1
data: {train: tr.tsv, valid: va.tsv, format: criteo, batch_size: ${small ? 4096 : 256}, cache_dir: cache}
features: {log1p: true}
model: {type: fm, embedding_dim: 4}
optimizer: {type: adam, lr: 0.001}
train: {epochs: ${small ? 6 : 2}}
tracking: {store: ${JSON.stringify(store)}}
`,
  );
  writeFileSync(
    join(dir, "study.yaml"),
    `name: ui-study
base: base.yaml
num_samples: ${trials}
space:
  optimizer.lr: {loguniform: [1.0e-4, 1.0e-1]}
  model.embedding_dim: {choice: [2, 4, 8]}
  embedding.optimizer.type: {choice: [adagrad, adam]}
searcher: {type: tpe, seed: 5, startup: 6}
scheduler: {type: asha, grace: 5, reduction: 3, max: 45}
trial_threads: 1
total_threads: 2
# Trials wait for the GATE file: the page is open on the study before the first one starts.
launcher: {template: "while [ ! -f ${join(dir, "GATE")} ]; do sleep 0.05; done; {cmd}"}
`,
  );
  const server = await startServer();
  const base = server.url.replace(/\/$/, "");
  const t0 = Date.now();
  const tuner = spawn(B, ["tune", join(dir, "study.yaml"), "--study-dir", join(dir, "s"), "--no-table", "--no-metrics"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  children.push(tuner);
  let tuneOut = "";
  tuner.stdout.on("data", (d) => (tuneOut += d));
  tuner.stderr.on("data", (d) => (tuneOut += d));
  const tuneDone = new Promise((r) => tuner.on("exit", (code) => r(code)));
  let studyId = 0;
  const trialRows = () => page.locator("#trials-table tbody tr").count();

  await step("the studies list links the running study", async () => {
    await page.goto(`${base}/#/study`);
    await page.waitForFunction(() => document.querySelector("#studies-table tbody tr a"), null, { timeout: 30000 }).catch(async () => {
      await page.reload();
      await page.waitForSelector("#studies-table tbody tr a", { timeout: 30000 });
    });
    studyId = Number(await page.getAttribute("#studies-table tbody tr", "data-run-id"));
    // Trials last a fraction of a second here: poll every 250 ms to see them run.
    await page.goto(`${base}/#/study/${studyId}?poll=250`);
    await page.waitForSelector("#study-cards");
  });
  await step("the trial table fills live while the study runs", async () => {
    await page.waitForSelector("#study-trials .empty");  // no trial yet: they wait for the gate
    writeFileSync(join(dir, "GATE"), "");
    // Both slots are busy while the study runs, so a poll shows running trials.
    await page.waitForSelector("#trials-table tbody tr[data-state='running']", { timeout: 60000 });
    const first = await trialRows();
    await page.waitForFunction((n) => document.querySelectorAll("#trials-table tbody tr").length > n, first, { timeout: 120000 });
    figures.rows_first_seen = first;
    figures.rows_later = await trialRows();
    await shot("study-live.png");
  });
  await step("the tuner finishes and the page shows the final study", async () => {
    const code = await tuneDone;
    figures.tune_wall_s = (Date.now() - t0) / 1000;
    assert(code === 0, `rectrain tune exited ${code}: ${tuneOut.slice(-2000)}`);
    await page.waitForFunction(() => document.querySelector("h1 .badge")?.textContent === "finished", null, { timeout: 15000 });
    await page.waitForFunction((n) => document.querySelectorAll("#trials-table tbody tr").length === n, trials, { timeout: 15000 });
    const states = await page.locator("#trials-table tbody tr").evaluateAll((trs) => trs.map((tr) => tr.dataset.state));
    assert(states.every((s) => ["finished", "stopped", "paused"].includes(s)), `every trial ended: ${states}`);
    assert(states.includes("finished") && (states.includes("stopped") || states.includes("paused")), `ASHA stopped some and finished some: ${states}`);
    const m = await page.evaluate(async (id) => (await (await fetch(`/api/runs/${id}/metrics?key=tune/best`)).json()).series[0].points, studyId);
    const tunerBest = m[m.length - 1][1];
    const shown = Number(await page.locator("#study-best-value .v").textContent());
    figures.best = tunerBest;
    assert(Math.abs(shown - tunerBest) < 1e-4, `best shown ${shown} = the tuner's tune/best ${tunerBest}`);
    assert(tuneOut.includes("best config:"), "the tuner printed the best config");
  });
  await step("parallel coordinates, rungs and the best-so-far curve", async () => {
    assert((await page.getAttribute("#study-parcoords .parcoords", "data-lines")) === String(trials), "one line per trial");
    assert((await page.getAttribute("#study-parcoords .parcoords", "data-axes")) === "4", "3 params + the metric");
    const labels = await page.locator("#study-parcoords .pc-axis text[font-weight='600']").allTextContents();
    assert(labels[0] === "optimizer.lr (log)", `the lr axis is logarithmic: ${labels}`);
    await page.locator("#study-parcoords .pc-line").last().hover({ force: true });
    await page.waitForFunction(() => /^t\d{3}: /.test(document.querySelector("#study-parcoords .chart-note")?.textContent ?? ""), null, { timeout: 5000 });
    const rung0 = await page.locator("#rungs-table tbody tr").first().locator("td").nth(2).textContent();
    assert(Number(rung0) === trials, `every trial completed rung 0 (${rung0})`);
    const top = await page.locator("#rungs-table tbody tr").last().locator("td").nth(2).textContent();
    assert(Number(top) >= 1 && Number(top) < trials, `fewer reached the top rung (${top})`);
    await page.waitForSelector("#study-best[data-points]");
    assert(Number(await page.getAttribute("#study-best", "data-points")) >= trials, "one best-so-far point per result");
    const ink = await inkedPixels("#study-best");
    assert(ink > 200, `best-so-far drawn (${ink} inked pixels)`);
    await shot("study.png");
  });
  await step("sorting by the metric puts the best trial first; a trial links back", async () => {
    const t1 = Date.now();
    await page.click("#trials-table th[data-col='value']");
    await page.waitForFunction(() => document.querySelector("#trials-table tbody tr td.best") !== null);
    figures.study_sort_ms = Date.now() - t1;
    const firstVal = Number(await page.locator("#trials-table tbody tr").first().locator("td.num").nth(1).textContent());
    const allVals = (await page.locator("#trials-table tbody tr").evaluateAll((trs) => trs.map((tr) => Number(tr.querySelectorAll("td.num")[1].textContent)))).filter((v) => Number.isFinite(v));
    assert(firstVal === Math.max(...allVals), `first row has the highest AUC (${firstVal} of ${allVals})`);
    await page.locator("#trials-table tbody tr").first().locator("td a").click();
    await page.waitForSelector("#study-link");
    await page.click("#study-link");
    await page.waitForSelector("#trials-table");
  });
  await step("the study page renders in bounded time", async () => {
    const t1 = Date.now();
    await page.goto(`${base}/#/runs`);
    await page.goto(`${base}/#/study/${studyId}`);
    await page.waitForFunction((n) => document.querySelectorAll("#trials-table tbody tr").length === n && document.querySelector("#study-best[data-points]"), trials, { timeout: BOUND_MS * 2 });
    figures.study_page_render_ms = Date.now() - t1;
    figures.trials = trials;
    assert(figures.study_page_render_ms < BOUND_MS, `study page ${figures.study_page_render_ms} ms`);
  });
  await stopServer(server);
}

let exitCode = 0;
try {
  const userDataDir = join(work, "chromium-profile"); // removed with `work` in finally
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("dialog", (d) => d.accept());
  if (suite === "demo") await demo();
  else if (suite === "scale") await scale();
  else if (suite === "study") await study();
  else throw new Error(`unknown suite ${suite}`);
  assert(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
  console.log(`# figures ${JSON.stringify(figures)}`);
  writeFileSync(join(args.out, `figures-${suite}.json`), JSON.stringify(figures, null, 2) + "\n");
} catch (e) {
  console.error(`FAIL (${suite}): ${e.stack ?? e}`);
  if (pageErrors.length) console.error(`page errors: ${pageErrors.join("; ")}`);
  exitCode = 1;
} finally {
  await context?.close().catch(() => {});
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
}
process.exit(exitCode);
