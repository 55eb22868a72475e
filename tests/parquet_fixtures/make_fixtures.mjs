// Generates the Parquet conformance fixtures read by src/rectrain/io/parquet/parquet_test.cc.
// Usage (from this folder): npm ci && node make_fixtures.mjs [outdir=.]
//
// Matrix: writer {duckdb, pqwasm} x codec {uncompressed, snappy, gzip, zstd, lz4_raw} x page
// version {v1, v2}  ->  <writer>_<codec>_<v1|v2>.parquet (20 files).
//   duckdb: @duckdb/node-api, COPY ... (FORMAT parquet, COMPRESSION c, PARQUET_VERSION V1|V2).
//           V2 means data page v2 + RLE_DICTIONARY / DELTA_BINARY_PACKED / BYTE_STREAM_SPLIT /
//           DELTA_LENGTH_BYTE_ARRAY.
//   pqwasm: parquet-wasm (arrow-rs) WriterVersion V1|V2, small data pages (several pages per
//           chunk) and a small dictionary-page limit (so high-cardinality strings fall back from
//           dictionary to PLAIN mid-chunk). In the v2 files i32 is forced to DELTA_BINARY_PACKED
//           and f64 to BYTE_STREAM_SPLIT.
//
// Every value is a function of the row index i (0 <= i < N). parquet_test.cc recomputes the same
// formulas; keep both in sync.
//   label  int32  non-null  i % 3 == 0 ? 1 : 0
//   i32    int32  non-null  (i * 1103515245 + 12345) % 2^31 - 2^30
//   i64    int64  nullable  null if i % 7 == 0, else (i even ? 1 : -1) * i * 1000000007
//   f32    float  nullable  null if i % 11 == 0, else (i - 2500) / 8
//   f64    double non-null  i / 3 (IEEE double division)
//   b      bool   nullable  null if i % 19 == 0, else i % 3 == 1
//   c_low  utf8   nullable  null if i % 13 == 0; "cat_7_é€" if i % 50 == 7; else "cat_" + (i % 50)
//   s_high utf8   non-null  "row-" + i + "-" + 8-digit lowercase hex of (i * 2654435761) % 2^32
//   fixed  FIXED_LEN_BYTE_ARRAY(16) nullable  null if i % 23 == 0, else big-endian int64
//          (i * 1000003) followed by big-endian int64 (i * 7 + 1). DuckDB writes it as UUID.
//   seq    list<int64>  null if i % 17 == 0; [] if i % 5 == 0; [i, null, -i] if i % 9 == 0;
//          else [i, i + 1, i + 2]
//   tags   list<utf8>   null if i % 19 == 0; [] if i % 4 == 0; ["t" + (i % 10), null] if i % 6 == 0;
//          else k = 0 .. (i % 4) - 1: "t" + ((i + k) % 10)
// After writing, the script reads every file back with DuckDB and checks it equals the DuckDB
// table built from the SQL formulas (so the JS and SQL formulas agree).
import * as arrow from 'apache-arrow';
import { Table, WriterPropertiesBuilder, Compression, WriterVersion, Encoding, writeParquet } from 'parquet-wasm';
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';

const outdir = process.argv[2] ?? '.';
const N = 2200;
const ROW_GROUP = 1024;  // pqwasm: 3 row groups (1024, 1024, 152); duckdb rounds up to 2048: 2 row groups
const CODECS = ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4_raw'];
fs.mkdirSync(outdir, { recursive: true });

// ---- DuckDB ----
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run(`SET threads = 1`);  // deterministic row-group layout
const hex16 = (e) => `printf('%016x', ${e})`;
await con.run(`
  CREATE TABLE t AS
  SELECT (i % 3 = 0)::INTEGER AS label,
         ((i * 1103515245 + 12345) % 2147483648 - 1073741824)::INTEGER AS i32,
         CASE WHEN i % 7 = 0 THEN NULL ELSE (CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END) * i * 1000000007 END::BIGINT AS i64,
         CASE WHEN i % 11 = 0 THEN NULL ELSE (i - 2500)::DOUBLE / 8.0 END::FLOAT AS f32,
         (i::DOUBLE / 3.0::DOUBLE)::DOUBLE AS f64,
         CASE WHEN i % 19 = 0 THEN NULL ELSE i % 3 = 1 END AS b,
         CASE WHEN i % 13 = 0 THEN NULL WHEN i % 50 = 7 THEN 'cat_7_é€' ELSE 'cat_' || (i % 50) END AS c_low,
         'row-' || i || '-' || printf('%08x', (i * 2654435761) % 4294967296) AS s_high,
         CASE WHEN i % 23 = 0 THEN NULL ELSE (
           SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' ||
                   substr(h, 17, 4) || '-' || substr(h, 21, 12))::UUID
           FROM (SELECT ${hex16('i * 1000003')} || ${hex16('i * 7 + 1')} AS h)) END AS fixed,
         CASE WHEN i % 17 = 0 THEN NULL
              WHEN i % 5 = 0 THEN []::BIGINT[]
              WHEN i % 9 = 0 THEN [i::BIGINT, NULL, -i::BIGINT]
              ELSE [i::BIGINT, i + 1, i + 2] END AS seq,
         CASE WHEN i % 19 = 0 THEN NULL
              WHEN i % 4 = 0 THEN []::VARCHAR[]
              WHEN i % 6 = 0 THEN ['t' || (i % 10), NULL]
              ELSE list_transform(range(i % 4), k -> 't' || ((i + k) % 10)) END AS tags
  FROM range(${N}) r(i) ORDER BY i`);

const written = [];
for (const codec of CODECS) {
  for (const ver of ['v1', 'v2']) {
    const path = `${outdir}/duckdb_${codec}_${ver}.parquet`;
    await con.run(`COPY (SELECT * FROM t) TO '${path}' (FORMAT parquet, COMPRESSION ${codec},
                   ROW_GROUP_SIZE ${ROW_GROUP}, PARQUET_VERSION ${ver.toUpperCase()})`);
    written.push(path);
  }
}

// ---- parquet-wasm ----
const cols = { label: new Int32Array(N), i32: new Int32Array(N), f64: new Float64Array(N) };
const i64 = [], f32 = [], b = [], c_low = [], s_high = [], fixed = [], seq = [], tags = [];
const be64 = (v) => { const a = new Uint8Array(8); new DataView(a.buffer).setBigInt64(0, BigInt(v)); return a; };
for (let i = 0; i < N; ++i) {
  cols.label[i] = i % 3 === 0 ? 1 : 0;
  cols.i32[i] = Number((BigInt(i) * 1103515245n + 12345n) % 2147483648n) - 1073741824;
  cols.f64[i] = i / 3;
  i64.push(i % 7 === 0 ? null : BigInt(i % 2 === 0 ? 1 : -1) * BigInt(i) * 1000000007n);
  f32.push(i % 11 === 0 ? null : (i - 2500) / 8);
  b.push(i % 19 === 0 ? null : i % 3 === 1);
  c_low.push(i % 13 === 0 ? null : i % 50 === 7 ? 'cat_7_é€' : `cat_${i % 50}`);
  s_high.push(`row-${i}-${Number((BigInt(i) * 2654435761n) % 4294967296n).toString(16).padStart(8, '0')}`);
  if (i % 23 === 0) fixed.push(null);
  else { const f = new Uint8Array(16); f.set(be64(i * 1000003), 0); f.set(be64(i * 7 + 1), 8); fixed.push(f); }
  seq.push(i % 17 === 0 ? null : i % 5 === 0 ? [] : i % 9 === 0 ? [BigInt(i), null, -BigInt(i)]
           : [BigInt(i), BigInt(i + 1), BigInt(i + 2)]);
  if (i % 19 === 0) tags.push(null);
  else if (i % 4 === 0) tags.push([]);
  else if (i % 6 === 0) tags.push([`t${i % 10}`, null]);
  else tags.push(Array.from({ length: i % 4 }, (_, k) => `t${(i + k) % 10}`));
}
const table = new arrow.Table({
  label: arrow.makeVector(cols.label),
  i32: arrow.makeVector(cols.i32),
  i64: arrow.vectorFromArray(i64, new arrow.Int64()),
  f32: arrow.vectorFromArray(f32, new arrow.Float32()),
  f64: arrow.makeVector(cols.f64),
  b: arrow.vectorFromArray(b, new arrow.Bool()),
  c_low: arrow.vectorFromArray(c_low, new arrow.Utf8()),
  s_high: arrow.vectorFromArray(s_high, new arrow.Utf8()),
  fixed: arrow.vectorFromArray(fixed, new arrow.FixedSizeBinary(16)),
  seq: arrow.vectorFromArray(seq, new arrow.List(new arrow.Field('element', new arrow.Int64(), true))),
  tags: arrow.vectorFromArray(tags, new arrow.List(new arrow.Field('element', new arrow.Utf8(), true))),
});
const ipc = arrow.tableToIPC(table, 'stream');
const PQ_CODEC = { uncompressed: Compression.UNCOMPRESSED, snappy: Compression.SNAPPY, gzip: Compression.GZIP,
                   zstd: Compression.ZSTD, lz4_raw: Compression.LZ4_RAW };
for (const codec of CODECS) {
  for (const ver of ['v1', 'v2']) {
    let props = new WriterPropertiesBuilder()
      .setCompression(PQ_CODEC[codec])
      .setDictionaryEnabled(true)
      .setWriterVersion(ver === 'v2' ? WriterVersion.V2 : WriterVersion.V1)
      .setMaxRowGroupSize(ROW_GROUP)
      .setDataPageSizeLimit(2048)
      .setWriteBatchSize(256)
      .setDictionaryPageSizeLimit(4096)
      .setCreatedBy('parquet-wasm 0.8.0 (rectrain fixtures)');
    if (ver === 'v2') {
      props = props.setColumnDictionaryEnabled('i32', false).setColumnEncoding('i32', Encoding.DELTA_BINARY_PACKED)
                   .setColumnDictionaryEnabled('f64', false).setColumnEncoding('f64', Encoding.BYTE_STREAM_SPLIT);
    }
    const path = `${outdir}/pqwasm_${codec}_${ver}.parquet`;
    fs.writeFileSync(path, writeParquet(Table.fromIPCStream(ipc), props.build()));
    written.push(path);
  }
}

// ---- verify every file with DuckDB against the SQL table ----
let total = 0;
for (const path of written) {
  // The UUID column reads back as UUID (duckdb) or BLOB (pqwasm); compare through its hex bytes.
  const norm = (src, uuid) => `SELECT label, i32, i64, f32, f64, b, c_low, s_high,
      ${uuid ? "replace(fixed::VARCHAR, '-', '')" : 'lower(hex(fixed))'} AS fixed_hex, seq, tags FROM ${src}`;
  const diff = await con.runAndReadAll(
    `SELECT count(*) AS n FROM ((${norm(`'${path}'`, path.includes('duckdb_'))}) EXCEPT ALL (${norm('t', true)}))`);
  const rows = await con.runAndReadAll(`SELECT count(*) AS n FROM '${path}'`);
  const meta = await con.runAndReadAll(
    `SELECT path_in_schema, string_agg(DISTINCT encodings, ' | ') AS enc, count(*) AS chunks
     FROM parquet_metadata('${path}') GROUP BY path_in_schema ORDER BY path_in_schema`);
  const n = Number(rows.getRowObjectsJson()[0].n), bad = Number(diff.getRowObjectsJson()[0].n);
  const size = fs.statSync(path).size;
  total += size;
  console.log(`${path}: ${size} bytes, rows=${n}, mismatched=${bad}`);
  for (const r of meta.getRowObjectsJson()) console.log(`    ${r.path_in_schema}: ${r.enc} (${r.chunks} chunks)`);
  if (n !== N || bad !== 0) { console.error(`FAILED: ${path}`); process.exitCode = 1; }
}
console.log(`total ${total} bytes`);
con.closeSync();
db.closeSync();
