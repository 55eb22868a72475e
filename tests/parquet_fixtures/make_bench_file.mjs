// Writes a larger file with the fixture columns (same formulas as make_fixtures.mjs) for
// parquet_benchmark: node make_bench_file.mjs OUT.parquet [rows=1000000] [codec=snappy] [V1|V2]
// Then: RECTRAIN_PARQUET_BENCH_FILE=OUT.parquet parquet_benchmark
import { DuckDBInstance } from '@duckdb/node-api';

const [out, rows = '1000000', codec = 'snappy', ver = 'V1'] = process.argv.slice(2);
if (!out) { console.error('usage: node make_bench_file.mjs OUT.parquet [rows] [codec] [V1|V2]'); process.exit(2); }
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run(`
  COPY (SELECT (i % 3 = 0)::INTEGER AS label,
         CASE WHEN i % 7 = 0 THEN NULL ELSE (CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END) * i * 1000000007 END::BIGINT AS i64,
         CASE WHEN i % 13 = 0 THEN NULL WHEN i % 50 = 7 THEN 'cat_7_é€' ELSE 'cat_' || (i % 50) END AS c_low,
         'row-' || i || '-' || printf('%08x', (i * 2654435761) % 4294967296) AS s_high,
         CASE WHEN i % 17 = 0 THEN NULL WHEN i % 5 = 0 THEN []::BIGINT[]
              WHEN i % 9 = 0 THEN [i::BIGINT, NULL, -i::BIGINT] ELSE [i::BIGINT, i + 1, i + 2] END AS seq
        FROM range(${Number(rows)}) r(i))
  TO '${out}' (FORMAT parquet, COMPRESSION ${codec}, PARQUET_VERSION ${ver})`);
console.log(`wrote ${out}`);
con.closeSync();
db.closeSync();
