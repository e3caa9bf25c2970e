#!/usr/bin/env bash
# Builds every Lambda function under functions/*/ (one per route group of
# the catalog; the CDK app deploys dist/<group>.zip as that group's
# function) for provided.al2023 on arm64: dist/<fn>/bootstrap and
# dist/<fn>.zip (bootstrap at the zip root, mode 0755). Two builds at a
# time; zips are written by a small Go program (scripts/lambdazip), so
# `zip` need not be installed.
# Usage: scripts/build-lambdas.sh [fn ...]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

if [[ $# -gt 0 ]]; then
  fns=("$@")
else
  fns=()
  for d in functions/*/; do
    [[ -f $d/main.go ]] && fns+=("$(basename "$d")")
  done
fi
[[ ${#fns[@]} -gt 0 ]] || { echo "build-lambdas: no functions under functions/" >&2; exit 1; }

mkdir -p dist .cache
# The zip writer is built once for the host.
go build -o .cache/lambdazip ./scripts/lambdazip

build_one() {
  local fn=$1
  [[ -f functions/$fn/main.go ]] || { echo "build-lambdas: functions/$fn/main.go not found" >&2; return 1; }
  rm -rf "dist/$fn" "dist/$fn.zip"
  mkdir -p "dist/$fn"
  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags lambda.norpc \
    -o "dist/$fn/bootstrap" "./functions/$fn"
  .cache/lambdazip "dist/$fn.zip" "dist/$fn/bootstrap"
  echo "  built dist/$fn.zip ($(( $(stat -c %s "dist/$fn.zip") / 1024 )) KiB; bootstrap $(stat -c %s "dist/$fn/bootstrap") bytes)"
}
export -f build_one

# Two jobs: the machines have two cores. xargs exits non-zero if any fails.
printf '%s\n' "${fns[@]}" | xargs -P 2 -I{} bash -c 'build_one "$@"' _ {}

# Drop outputs of functions that no longer exist (the CDK app makes one
# Lambda per functions/ directory; stale zips would only mislead).
if [[ $# -eq 0 ]]; then
  for z in dist/*.zip; do
    fn=$(basename "$z" .zip)
    [[ -d functions/$fn ]] || { rm -rf "dist/$fn" "$z"; echo "  removed stale dist/$fn.zip"; }
  done
fi
echo "build-lambdas: ${#fns[@]} functions in $(( $(date +%s) - start ))s"
