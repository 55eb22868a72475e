// Checks Parquet files written by `rectrain data convert --to parquet` with independent readers:
// DuckDB (schema, row count, every value in row order against DuckDB's own reading of the source
// file, codecs, encodings and statistics through parquet_metadata()) and parquet-wasm (arrow-rs:
// row and column counts, every value of a few columns). Run by tests/parquet_writer_duckdb_test.sh,
// which writes the files; prints one line per check and exits 1 on the first mismatch.
// Usage: node check_rectrain_writer.mjs DIR
import { DuckDBInstance } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import { readParquet } from 'parquet-wasm';
import fs from 'node:fs';

const dir = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
const rows = async (sql) => (await con.runAndReadAll(sql)).getRowsJson();

function fail(msg) {
  console.error(`FAILED: ${msg}`);
  process.exit(1);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// Every row of `ours` (a parquet file or glob, or a SQL relation) equals the row of `want` (a SQL
// relation) in order.
async function expectRows(name, ours, want) {
  const got = await rows(ours.startsWith('(') ? `SELECT * FROM ${ours}` : `SELECT * FROM read_parquet('${ours}')`);
  const exp = await rows(`SELECT * FROM ${want}`);
  if (got.length !== exp.length) fail(`${name}: ${got.length} rows, expected ${exp.length}`);
  for (let i = 0; i < got.length; ++i) {
    if (!same(got[i], exp[i])) fail(`${name}: row ${i}: ${JSON.stringify(got[i])} != ${JSON.stringify(exp[i])}`);
  }
  console.log(`${name}: ${got.length} rows equal in order`);
}

async function expectSchema(name, ours, types) {
  const d = await q(`DESCRIBE SELECT * FROM read_parquet('${ours}')`);
  const got = Object.fromEntries(d.map((r) => [r.column_name, r.column_type]));
  for (const [col, type] of Object.entries(types)) {
    if (got[col] !== type) fail(`${name}: column ${col} is ${got[col]}, expected ${type}`);
  }
  if (d.length !== Object.keys(types).length) fail(`${name}: ${d.length} columns, expected ${Object.keys(types).length}`);
  console.log(`${name}: schema ${d.length} columns as expected`);
}

// Codec of every chunk; the listed columns dictionary-encoded; min/max/null statistics of the
// listed numeric columns equal DuckDB's aggregates over the values.
async function expectMetadata(name, ours, { codec, dictionary = [], stats = [] }) {
  const meta = await q(`SELECT path_in_schema AS col, compression, encodings, stats_min_value, stats_max_value,
                               stats_null_count FROM parquet_metadata('${ours}')`);
  for (const m of meta) if (m.compression !== codec) fail(`${name}: ${m.col} compressed ${m.compression}, expected ${codec}`);
  for (const col of dictionary) {
    const chunks = meta.filter((m) => m.col === col);
    if (chunks.length === 0 || !chunks.every((m) => m.encodings.includes('RLE_DICTIONARY'))) {
      fail(`${name}: ${col} encodings ${chunks.map((m) => m.encodings).join(' | ')}: no RLE_DICTIONARY`);
    }
  }
  for (const col of stats) {
    const chunks = meta.filter((m) => m.col === col);
    const agg = (await q(`SELECT min("${col}")::VARCHAR AS lo, max("${col}")::VARCHAR AS hi,
                                 (count(*) - count("${col}"))::VARCHAR AS nulls FROM read_parquet('${ours}')`))[0];
    const lo = chunks.map((m) => Number(m.stats_min_value)).reduce((a, b) => Math.min(a, b));
    const hi = chunks.map((m) => Number(m.stats_max_value)).reduce((a, b) => Math.max(a, b));
    const nulls = chunks.map((m) => Number(m.stats_null_count)).reduce((a, b) => a + b);
    if (lo !== Number(agg.lo) || hi !== Number(agg.hi) || nulls !== Number(agg.nulls)) {
      fail(`${name}: ${col} statistics min ${lo} max ${hi} nulls ${nulls}, values ${agg.lo} ${agg.hi} ${agg.nulls}`);
    }
  }
  const encodings = [...new Set(meta.map((m) => m.encodings))].join(' | ');
  console.log(`${name}: ${meta.length} chunks ${codec}; encodings ${encodings}; statistics of ${stats.length} columns match`);
}

// parquet-wasm (arrow-rs) reads the file: row and column counts, and `cols` equal DuckDB's values.
async function expectArrowRs(name, file, cols) {
  const table = arrow.tableFromIPC(readParquet(fs.readFileSync(file)).intoIPCStream());
  const n = Number((await q(`SELECT count(*) AS n FROM read_parquet('${file}')`))[0].n);
  const w = (await q(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).length;
  if (table.numRows !== n || table.numCols !== w) fail(`${name}: parquet-wasm reads ${table.numRows}x${table.numCols}, DuckDB ${n}x${w}`);
  for (const col of cols) {
    const want = (await rows(`SELECT "${col}"::VARCHAR FROM read_parquet('${file}')`)).map((r) => r[0]);
    const vec = table.getChild(col);
    for (let i = 0; i < n; ++i) {
      const v = vec.get(i);  // null where the validity bitmap says so
      const g = v === null || v === undefined ? null : String(v);
      // Numbers print differently in JS and DuckDB ("-2500" / "-2500.0"): compare their values.
      const equal = g === want[i] || (g !== null && want[i] !== null && g !== '' && Number(g) === Number(want[i]));
      if (!equal) fail(`${name}: parquet-wasm ${col} row ${i}: ${g} != ${want[i]}`);
    }
  }
  console.log(`${name}: parquet-wasm reads ${table.numRows} rows x ${table.numCols} columns; ${cols.join(', ')} equal`);
}

// ---- criteo TSV (data gen): three codecs, and parts of a target size ----
const criteoTypes = { label: 'INTEGER' };
for (let i = 1; i <= 13; ++i) criteoTypes['I' + i] = 'BIGINT';
for (let i = 1; i <= 26; ++i) criteoTypes['C' + i] = 'VARCHAR';
const criteoSrc = `read_csv('${dir}/g.tsv', delim='\t', header=false, quote='', nullstr='',
                            columns=${JSON.stringify(criteoTypes).replaceAll('"', "'")})`;
for (const [codec, meta] of [['zstd', 'ZSTD'], ['snappy', 'SNAPPY'], ['none', 'UNCOMPRESSED']]) {
  const f = `${dir}/g_${codec}.parquet`;
  await expectSchema(`criteo ${codec}`, f, criteoTypes);
  await expectRows(`criteo ${codec}`, f, criteoSrc);
  await expectMetadata(`criteo ${codec}`, f, { codec: meta, dictionary: ['C1', 'C9', 'C26'], stats: ['I1', 'I5', 'I13'] });
}
await expectArrowRs('criteo zstd', `${dir}/g_zstd.parquet`, ['label', 'I1', 'I13', 'C1', 'C26']);
const parts = fs.readdirSync(`${dir}/g_parts`).filter((p) => p.endsWith('.parquet')).sort();
if (parts.length < 2) fail(`criteo parts: ${parts.length} parts`);
await expectRows(`criteo ${parts.length} parts`, `${dir}/g_parts/part-*.parquet`, criteoSrc);

// ---- csv: quoted fields, UTF-8, nulls, an unused column, integers and doubles ----
const csvTypes = { label: 'INTEGER', age: 'BIGINT', score: 'DOUBLE', city: 'VARCHAR', note: 'VARCHAR' };
await expectSchema('csv', `${dir}/r.parquet`, csvTypes);
await expectRows('csv', `${dir}/r.parquet`, `read_csv('${dir}/r.csv', header=true, quote='"', escape='"', nullstr='',
                                                      columns=${JSON.stringify(csvTypes).replaceAll('"', "'")})`);
await expectMetadata('csv', `${dir}/r.parquet`, { codec: 'ZSTD', dictionary: ['city'], stats: ['age', 'score'] });
await expectArrowRs('csv', `${dir}/r.parquet`, ['age', 'score', 'city', 'note']);

// ---- libsvm: label (-1 -> 0), dense indices, the bag of categorical indices as a list ----
{
  const expected = [];
  for (const line of fs.readFileSync(`${dir}/s.svm`, 'utf8').split('\n').filter((l) => l.length > 0)) {
    const [label, ...pairs] = line.trim().split(/\s+/);
    const row = { label: label === '-1' ? 0 : Number(label.replace('+', '')), 1: null, 2: null, features: [] };
    for (const p of pairs) {
      const [k, v] = p.split(':');
      const key = String(Number(k));
      if (key === '1' || key === '2') row[key] = Number(v);
      else row.features.push(key);
    }
    expected.push(row);
  }
  await expectSchema('libsvm', `${dir}/s.parquet`, { label: 'INTEGER', 1: 'DOUBLE', 2: 'BIGINT', features: 'VARCHAR[]' });
  const got = await q(`SELECT label, "1", "2", features FROM read_parquet('${dir}/s.parquet')`);
  if (got.length !== expected.length) fail(`libsvm: ${got.length} rows, expected ${expected.length}`);
  for (let i = 0; i < got.length; ++i) {
    const g = got[i], e = expected[i];
    const num = (x) => (x === null ? null : Number(x));
    if (num(g.label) !== e.label || num(g['1']) !== e['1'] || num(g['2']) !== e['2'] || !same(g.features, e.features)) {
      fail(`libsvm row ${i}: ${JSON.stringify(g)} != ${JSON.stringify(e)}`);
    }
  }
  console.log(`libsvm: ${got.length} rows equal (lists of indices)`);
}

// ---- Parquet input (the DuckDB fixture: nulls, booleans, floats, lists) written again ----
{
  // DuckDB reads the fixture's FIXED_LEN_BYTE_ARRAY(16) as UUID, ours (BYTE_ARRAY) as BLOB: compare hex.
  const fixture = `${dir}/duckdb_snappy_v1.parquet`, ours = `${dir}/fx.parquet`;
  const cols = `label, i32, i64, f32, f64, b, c_low, s_high, seq, tags`;
  await expectRows('parquet input', `(SELECT ${cols}, lower(hex(fixed)) FROM read_parquet('${ours}'))`,
                   `(SELECT ${cols}, replace(fixed::VARCHAR, '-', '') FROM '${fixture}')`);
  await expectSchema('parquet input', ours, { label: 'INTEGER', i32: 'INTEGER', i64: 'BIGINT', f32: 'FLOAT', f64: 'DOUBLE',
                                              b: 'BOOLEAN', c_low: 'VARCHAR', s_high: 'VARCHAR', fixed: 'BLOB',
                                              seq: 'BIGINT[]', tags: 'VARCHAR[]' });
  await expectArrowRs('parquet input', ours, ['i64', 'f32', 'b', 'c_low']);
}

con.closeSync();
db.closeSync();
console.log('all checks passed');
