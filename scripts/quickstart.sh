#!/usr/bin/env bash
# The README's main command: installs dependencies, builds, then generates a default dataset,
# trains DeepFM on it and prints validation AUC next to the oracle AUC (about a minute).
# Usage: scripts/quickstart.sh [extra rectrain quickstart flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh release
exec build/release/rectrain quickstart --dir runs/quickstart "$@"
