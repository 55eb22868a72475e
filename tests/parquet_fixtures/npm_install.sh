#!/bin/sh
# Installs this folder's npm packages (DuckDB, parquet-wasm, apache-arrow; package-lock.json)
# into DIR with `npm ci` and copies the scripts there (Node resolves their imports from DIR). DIR
# keeps installed.lock, the lock file of its last successful install, so a second call with an
# unchanged lock file installs nothing. Used by tests/parquet_writer_duckdb_test.sh and
# bench/parquet/run.sh. Exit 77 when npm or node is missing (scripts/install_deps.sh installs
# them), 1 when npm ci fails.
# Usage: npm_install.sh DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
if ! command -v npm > /dev/null 2>&1 || ! command -v node > /dev/null 2>&1; then
  echo "npm/node not found (scripts/install_deps.sh installs them)" >&2
  exit 77
fi
mkdir -p "$dir"
if ! cmp -s "$here/package-lock.json" "$dir/installed.lock"; then
  rm -f "$dir/installed.lock"
  cp "$here/package.json" "$here/package-lock.json" "$dir/"
  (cd "$dir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) ||
    { echo "npm ci in $dir failed (it needs the npm registry)" >&2; exit 1; }
  cp "$here/package-lock.json" "$dir/installed.lock"
fi
cp "$here"/*.mjs "$dir/"
