#!/usr/bin/env bash
# Starts or stops the emulators the AWS adapter tests use, on 127.0.0.1 only:
#   dynalite (DynamoDB) and fauxqs (SQS and S3), pinned in scripts/emulators.
# `start` writes .cache/emulators.env for the tests; `stop` ends both.
# The preload loopback.cjs pins every listener to 127.0.0.1 (fauxqs itself
# would bind 0.0.0.0).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=scripts/emulators
cache=.cache
mkdir -p "$cache"

free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

wait_for() { # url name
  for _ in $(seq 1 100); do
    if node -e "fetch('$1').then(r=>process.exit(r.status<500?0:1)).catch(()=>process.exit(1))" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "emulators: $2 did not start (see $cache/$2.log)" >&2
  return 1
}

stop() {
  for name in dynalite fauxqs; do
    if [[ -f $cache/$name.pid ]]; then
      kill "$(cat "$cache/$name.pid")" 2>/dev/null || true
      rm -f "$cache/$name.pid"
    fi
  done
}

case ${1:-} in
start)
  if [[ ! -d $dir/node_modules ]]; then
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  fi
  stop
  ddb=$(free_port)
  aws=$(free_port)
  node --require "./$dir/loopback.cjs" "$dir/node_modules/dynalite/cli.js" --port "$ddb" >"$cache/dynalite.log" 2>&1 &
  echo $! >"$cache/dynalite.pid"
  FAUXQS_PORT=$aws FAUXQS_LOGGER=false FAUXQS_DEFAULT_REGION=us-east-1 \
    node --require "./$dir/loopback.cjs" "$dir/node_modules/fauxqs/dist/cli.js" >"$cache/fauxqs.log" 2>&1 &
  echo $! >"$cache/fauxqs.pid"
  wait_for "http://127.0.0.1:$ddb/" dynalite
  wait_for "http://127.0.0.1:$aws/health" fauxqs
  cat >"$cache/emulators.env" <<ENV
AGENTPLANE_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$ddb
AGENTPLANE_TEST_AWS_ENDPOINT=http://127.0.0.1:$aws
AWS_ACCESS_KEY_ID=test
AWS_SECRET_ACCESS_KEY=test
AWS_REGION=us-east-1
ENV
  echo "emulators: dynalite on 127.0.0.1:$ddb, fauxqs on 127.0.0.1:$aws"
  ;;
stop)
  stop
  ;;
*)
  echo "usage: $0 start|stop" >&2
  exit 2
  ;;
esac
