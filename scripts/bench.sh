#!/usr/bin/env bash
# Benchmarks (make bench): every Go benchmark under shared/, with the
# emulators running so adapters that need them are measured too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/emulators.sh start
trap 'bash scripts/emulators.sh stop' EXIT
set -a; source .cache/emulators.env; set +a
go test -run=NONE -bench=. -benchmem -count=1 -timeout 30m ./shared/... | tee .cache/bench.txt
