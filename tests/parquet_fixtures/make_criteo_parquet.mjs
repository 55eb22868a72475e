// Converts a criteo-format TSV (label, I1..I13, C1..C26) into Parquet with DuckDB (dictionary-
// encoded categoricals, DuckDB's default row groups of 122,880 rows) with the same rows, for
// data_reader_benchmark's Parquet-vs-TSV comparison (RECTRAIN_BENCH_INPUT + RECTRAIN_BENCH_PARQUET)
// and bench/parquet/run.sh (DuckDB's own output beside rectrain's). Prints the seconds taken.
// Usage: node make_criteo_parquet.mjs IN.tsv OUT.parquet [snappy|zstd|uncompressed]
import { DuckDBInstance } from '@duckdb/node-api';

const [input, output, codec = 'snappy'] = process.argv.slice(2);
const cols = { label: 'INTEGER' };
for (let i = 1; i <= 13; ++i) cols['I' + i] = 'BIGINT';
for (let i = 1; i <= 26; ++i) cols['C' + i] = 'VARCHAR';
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const t0 = performance.now();
await con.run(`COPY (SELECT * FROM read_csv('${input}', delim='\t', header=false, quote='',
                     columns=${JSON.stringify(cols).replaceAll('"', "'")}))
               TO '${output}' (FORMAT parquet, COMPRESSION ${codec})`);
console.log(`wrote ${output} (${codec}) in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
