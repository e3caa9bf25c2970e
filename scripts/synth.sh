#!/usr/bin/env bash
# Synthesizes the US and EU stacks into cdk.out/ (one function, and when it
# consumes topics one queue, per route group of shared/compose/catalog;
# cdk.out/agentplane.layout.json lists them for the LocalStack hooks) and
# exports each state machine's resolved ASL to
# cdk.out/asl/<stack>.<workflow>.asl.json.
#
# The CDK app runs directly (cd infra && go run .) with CDK_OUTDIR, so no
# CDK CLI and no network is needed; the app reads its context (regions,
# feature flags) from cdk.json as the CLI would pass it. `npx cdk synth`
# with a CDK CLI gives the same templates (cdk.json "app").
#
# The Lambda zips (dist/<fn>.zip) are built first when one is missing or
# older than the Go sources; AGENTPLANE_SKIP_BUILD=1 uses dist/ as it is.
#
# Usage: scripts/synth.sh [outdir]   (default cdk.out)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-cdk.out}
[[ $out = /* ]] || out=$root/$out
start=$(date +%s)

export JSII_RUNTIME_PACKAGE_CACHE_ROOT=${JSII_RUNTIME_PACKAGE_CACHE_ROOT:-$root/.cache/jsii}
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1
mkdir -p "$JSII_RUNTIME_PACKAGE_CACHE_ROOT"

# stale reports whether a function's zip is missing or older than a Go
# source it may be built from (functions/, shared/, the module files).
stale() {
  local fn zip oldest=""
  for d in functions/*/; do
    fn=$(basename "$d")
    [[ -f $d/main.go ]] || continue
    zip=dist/$fn.zip
    [[ -f $zip ]] || { echo "dist/$fn.zip is missing"; return 0; }
    if [[ -z $oldest || $zip -ot $oldest ]]; then oldest=$zip; fi
  done
  local newer
  newer=$(find functions shared cmd go.mod go.sum -newer "$oldest" \( \( -name '*.go' ! -name '*_test.go' \) -o -name 'go.mod' -o -name 'go.sum' \) -print -quit 2>/dev/null || true)
  [[ -n $newer ]] && { echo "$newer is newer than $oldest"; return 0; }
  return 1
}

if [[ ${AGENTPLANE_SKIP_BUILD:-} != 1 ]] && why=$(stale); then
  echo "== synth: building the Lambda zips ($why)"
  bash scripts/build-lambdas.sh
fi

echo "== synth: cdk.out from infra/ (go run .)"
rm -rf "$out"
(cd infra && CDK_OUTDIR=$out go run .)
(cd infra && go run ./aslexport "$out") | sed "s|^$root/|  wrote |"

templates=$(cd "$out" && ls ./*.template.json | sed 's|^\./||' | tr '\n' ' ')
echo "synth: ${templates}in $(( $(date +%s) - start ))s"
