#!/usr/bin/env bash
# Runs every test. `scripts/test.sh go` runs only the product's Go tests.
# Installs what it needs (npm packages from lock files, pinned Go tools),
# starts the emulators on 127.0.0.1 and stops them on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
start=$(date +%s)
mkdir -p .cache

# Node packages the tests use (emulators, real clients), from lock files.
for dir in scripts/emulators tests/*/; do
  dir=${dir%/}
  if [[ -f $dir/package-lock.json ]]; then
    echo "== npm ci in $dir"
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  fi
done

# The UI's browser tests (tests/ui) drive Debian's chromium; no browser is
# downloaded from anywhere else.
if [[ ! -x /usr/bin/chromium ]]; then
  echo "== apt-get install chromium"
  sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

# Emulators for the AWS adapters: dynalite (DynamoDB), fauxqs (SQS, S3).
if [[ -f scripts/emulators.sh ]]; then
  bash scripts/emulators.sh start
  trap 'bash scripts/emulators.sh stop' EXIT
  set -a; source .cache/emulators.env; set +a
else
  echo "== NOTE: scripts/emulators.sh is not in this tree yet: AWS adapter tests do not run"
fi

echo "== lint"
make --no-print-directory lint

echo "== go test -race"
go test -race -count=1 -timeout 30m ./...

if [[ $what == all ]]; then
  if [[ -f scripts/infra-test.sh ]]; then
    echo "== infrastructure (CDK assertions, cdk-nag, asl-validator)"
    bash scripts/infra-test.sh
  else
    echo "== NOTE: scripts/infra-test.sh is not in this tree yet: no CDK tests run"
  fi
fi

echo "== all tests passed in $(( $(date +%s) - start ))s"
