// Writes reader_rows.tsv: the rows of duckdb_snappy_v1.parquet as tab-separated text with a
// header, for src/rectrain/data/parquet_reader_test.cc (the same rows from TSV and Parquet must
// give identical Batches). Lists become '|'-joined strings (a null element -> an empty piece,
// a null or empty list -> an empty field); NULL -> empty field.
// Usage (from this folder): npm ci && node make_reader_fixture.mjs
import { DuckDBInstance } from '@duckdb/node-api';

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run(`SET threads = 1`);
await con.run(`
  COPY (
    SELECT label, i32, i64, f32, f64, b, c_low, s_high,
           array_to_string(list_transform(seq, x -> coalesce(x::VARCHAR, '')), '|') AS seq,
           array_to_string(list_transform(tags, x -> coalesce(x, '')), '|') AS tags
    FROM read_parquet('duckdb_snappy_v1.parquet')
  ) TO 'reader_rows.tsv' (FORMAT csv, DELIMITER '\t', HEADER true, QUOTE '')`);
console.log('wrote reader_rows.tsv');
