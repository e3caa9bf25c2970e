#!/usr/bin/env bash
# Benchmarks (make bench): the store adapters (bbolt; DynamoDB against
# dynalite and minidyn) and every other package under shared/ that has
# benchmarks, with the emulators running so adapters that need them are
# measured too. Output: ns/op, B/op, allocs/op, also saved to .cache/bench.txt.
#   BENCHTIME=3s scripts/bench.sh     # longer runs (default 1s)
#   scripts/bench.sh ./shared/kernel/store/... # only these packages
set -euo pipefail
cd "$(dirname "$0")/.."
state=${AGENTPLANE_EMULATORS_DIR:-.cache}
mkdir -p .cache

bash scripts/emulators.sh start
trap 'bash scripts/emulators.sh stop' EXIT
set -a
# shellcheck disable=SC1091
source "$state/emulators.env"
set +a

if [[ $# -gt 0 ]]; then
  pkgs=("$@")
else
  # Packages whose tests define a benchmark.
  mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func Benchmark' shared | xargs -n1 dirname | sort -u | sed 's|^|./|')
fi
echo "== benchmarks in: ${pkgs[*]}"
go test -run=NONE -bench=. -benchmem -count=1 -benchtime="${BENCHTIME:-1s}" -timeout 30m "${pkgs[@]}" | tee .cache/bench.txt
