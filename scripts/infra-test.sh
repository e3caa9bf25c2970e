#!/usr/bin/env bash
# Tests the CDK app (infra/) and the Lambda builds: gofmt, go vet,
# staticcheck (pinned) and the tests of infra/ (assertions on both region
# stacks, generated from the catalog) and of scripts/lambda-init; then
# synthesizes cdk.out/ (building dist/ when stale), runs cdk-nag's
# AwsSolutions pack over both templates (every finding must be acknowledged
# with its reason in infra/nag/acknowledgements.js) and asl-validator over
# the exported state machines (cdk.out/asl/); last, checks that every
# function's bootstrap (linux/arm64, as deployed) is at most 15 MB
# (15,000,000 bytes; AGENTPLANE_MAX_BOOTSTRAP_BYTES overrides). A failed
# size check fails the script after everything else has run.
# Works on a clean clone: builds the Lambda zips and installs the pinned npm
# packages (infra/nag/package-lock.json) as needed. Needs no AWS account,
# no Docker and, once the Go modules and npm packages are cached, no network.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$(date +%s)
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

export JSII_RUNTIME_PACKAGE_CACHE_ROOT=${JSII_RUNTIME_PACKAGE_CACHE_ROOT:-$root/.cache/jsii}
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1
mkdir -p "$JSII_RUNTIME_PACKAGE_CACHE_ROOT"

step() { echo "== infra: $* ($(( $(date +%s) - start ))s)"; }

step "gofmt"
unformatted=$(gofmt -l infra scripts/lambda-init)
[[ -z $unformatted ]] || { echo "gofmt: not formatted:"; echo "$unformatted"; exit 1; }

step "go vet"
(cd infra && go vet ./...)
go vet ./scripts/lambda-init

step "staticcheck"
(cd infra && go run "$STATICCHECK" ./...)
go run "$STATICCHECK" ./scripts/lambda-init

step "go test (assertions on both stacks, LocalStack hooks, lambda-init)"
(cd infra && go test -count=1 ./...)
go test -count=1 ./scripts/lambda-init

step "synth"
bash scripts/synth.sh

# npm ci reinstalls from scratch every time; a stamp of the lock file it
# installed lets a warm run skip it.
stamp=infra/nag/node_modules/.agentplane-lock.sha256
lock_sum=$(sha256sum infra/nag/package-lock.json | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$lock_sum" ]]; then
  step "infra/nag packages up to date with package-lock.json"
else
  step "npm ci in infra/nag"
  npm ci --prefix infra/nag --no-audit --no-fund --loglevel=error
  echo "$lock_sum" >"$stamp"
fi

step "cdk-nag (AwsSolutions) and asl-validator"
node infra/nag/nag.js "$root/cdk.out"

# Sizes of what synth deployed (dist/, rebuilt above when older than the
# sources): a function must link only its own group's modules.
max=${AGENTPLANE_MAX_BOOTSTRAP_BYTES:-15000000}
step "bootstrap sizes (linux/arm64, at most $max bytes)"
oversize=0
for d in functions/*/; do
  fn=$(basename "$d")
  [[ -f $d/main.go ]] || continue
  bin=dist/$fn/bootstrap
  if [[ ! -f $bin ]]; then
    echo "  $bin is missing"
    oversize=1
    continue
  fi
  size=$(stat -c %s "$bin")
  verdict=ok
  if (( size > max )); then
    verdict="OVER by $(( size - max )) bytes"
    oversize=1
  fi
  printf '  %-14s %11d bytes  %6.2f MB  %s\n' "$fn" "$size" "$(awk "BEGIN {print $size/1000000}")" "$verdict"
done
if (( oversize )); then
  echo "infra: a bootstrap is over $max bytes; see which packages it links with" >&2
  echo "  go version -m dist/<fn>/bootstrap   and   go tool nm -size -sort size (on a build without -s -w)" >&2
  exit 1
fi

echo "== infra: passed in $(( $(date +%s) - start ))s"
