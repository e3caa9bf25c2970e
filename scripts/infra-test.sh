#!/usr/bin/env bash
# Tests the CDK app (infra/): gofmt, go vet, staticcheck (pinned) and the
# assertion tests of both region stacks; then synthesizes cdk.out/ and runs
# cdk-nag's AwsSolutions pack over both templates (every finding must be
# acknowledged with its reason in infra/nag/acknowledgements.js) and
# asl-validator over the exported state machines (cdk.out/asl/).
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
unformatted=$(gofmt -l infra)
[[ -z $unformatted ]] || { echo "gofmt: not formatted:"; echo "$unformatted"; exit 1; }

step "go vet"
(cd infra && go vet ./...)

step "staticcheck"
(cd infra && go run "$STATICCHECK" ./...)

step "go test (assertions on both stacks)"
(cd infra && go test -count=1 ./...)

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

echo "== infra: passed in $(( $(date +%s) - start ))s"
