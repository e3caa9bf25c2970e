#!/usr/bin/env bash
# Starts or stops the emulators the AWS adapter tests use, on 127.0.0.1 only:
#   dynalite (DynamoDB) and fauxqs (SQS and S3), pinned in scripts/emulators.
#
#   scripts/emulators.sh start   # background, free ports, waits until they answer
#   scripts/emulators.sh stop
#
# `start` writes $dir/emulators.env (dir: AGENTPLANE_EMULATORS_DIR, default
# .cache) with AGENTPLANE_TEST_DYNAMODB_ENDPOINT, AGENTPLANE_TEST_AWS_ENDPOINT
# and test credentials; `stop` ends the processes whose pids it recorded there.
# A separate AGENTPLANE_EMULATORS_DIR keeps two runs in one tree apart.
#
# dynalite binds with --host; fauxqs always binds 0.0.0.0, so the preload
# loopback.cjs pins every listener of both to 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=scripts/emulators
state=${AGENTPLANE_EMULATORS_DIR:-.cache}
mkdir -p "$state"

free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

wait_for() { # url name pid
  for _ in $(seq 1 150); do
    if ! kill -0 "$3" 2>/dev/null; then
      echo "emulators: $2 exited; its log, $state/$2.log:" >&2
      tail -n 20 "$state/$2.log" >&2
      return 1
    fi
    if node -e "fetch('$1').then(r=>process.exit(r.status<500?0:1)).catch(()=>process.exit(1))" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "emulators: $2 did not answer on $1 within 30s (see $state/$2.log)" >&2
  return 1
}

# ours says whether pid still runs one of our emulators (not a recycled pid).
ours() {
  [[ -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q "$pkg/node_modules"
}

stop() {
  for name in dynalite fauxqs; do
    local f=$state/$name.pid
    if [[ -f $f ]]; then
      local pid
      pid=$(cat "$f")
      if ours "$pid"; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      fi
      rm -f "$f"
    fi
  done
  rm -f "$state/emulators.env"
}

case ${1:-} in
start)
  if [[ ! -d $pkg/node_modules/dynalite || ! -d $pkg/node_modules/fauxqs ]]; then
    npm ci --prefix "$pkg" --no-audit --no-fund --loglevel=error
  fi
  stop
  ddb=$(free_port)
  aws=$(free_port)
  # Tables are usable at once (the real service takes seconds; tests
  # create one per case).
  node --require "./$pkg/loopback.cjs" "$pkg/node_modules/dynalite/cli.js" \
    --host 127.0.0.1 --port "$ddb" --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 \
    >"$state/dynalite.log" 2>&1 &
  echo $! >"$state/dynalite.pid"
  FAUXQS_PORT=$aws FAUXQS_LOGGER=false FAUXQS_DEFAULT_REGION=us-east-1 \
    node --require "./$pkg/loopback.cjs" "$pkg/node_modules/fauxqs/dist/cli.js" >"$state/fauxqs.log" 2>&1 &
  echo $! >"$state/fauxqs.pid"
  if ! wait_for "http://127.0.0.1:$ddb/" dynalite "$(cat "$state/dynalite.pid")" ||
    ! wait_for "http://127.0.0.1:$aws/health" fauxqs "$(cat "$state/fauxqs.pid")"; then
    stop
    exit 1
  fi
  cat >"$state/emulators.env" <<ENV
AGENTPLANE_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$ddb
AGENTPLANE_TEST_AWS_ENDPOINT=http://127.0.0.1:$aws
AWS_ACCESS_KEY_ID=test
AWS_SECRET_ACCESS_KEY=test
AWS_REGION=us-east-1
ENV
  echo "emulators: dynalite on 127.0.0.1:$ddb, fauxqs on 127.0.0.1:$aws ($state/emulators.env)"
  ;;
stop)
  stop
  ;;
*)
  echo "usage: $0 start|stop" >&2
  exit 2
  ;;
esac
