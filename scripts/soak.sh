#!/usr/bin/env bash
# Item 3 of issue 9: N consecutive short runs of the built server (init, admin commands,
# start then SIGTERM) on the Node found on PATH (./pnpmw exec bash scripts/soak.sh puts Node 24
# first). Counts every process that ends by a signal other than our SIGTERM, or with an
# unexpected exit code. Not part of `pnpm test`: run `pnpm build` first.
#   usage: scripts/soak.sh [N=100]
set -u
N=${1:-100}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/packages/server/dist/bin.js"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
crashes=0; failures=0; processes=0
check() { # name rc
  processes=$((processes + 1))
  if [ "$2" -ge 128 ]; then crashes=$((crashes + 1)); echo "run $i: $1 died by signal $(( $2 - 128 ))" >&2
  elif [ "$2" -ne 0 ]; then failures=$((failures + 1)); echo "run $i: $1 exit $2" >&2; fi
}
start=$(date +%s)
echo "node $(node --version), $N runs"
for i in $(seq 1 "$N"); do
  D="$WORK/d$i"
  node "$BIN" init --data-dir "$D" >/dev/null 2>&1; check init $?
  printf 'correct horse battery' | node "$BIN" admin user create --data-dir "$D" --email "a$i@example.com" --name A --password-stdin >/dev/null 2>&1; check 'user create' $?
  node "$BIN" admin vault create --data-dir "$D" --name shop --owner "a$i@example.com" >/dev/null 2>&1; check 'vault create' $?
  printf 'postgres://x' | node "$BIN" admin var set --data-dir "$D" --vault shop --env development DATABASE_URL >/dev/null 2>&1; check 'var set' $?
  node "$BIN" admin var list --data-dir "$D" --vault shop --env development >/dev/null 2>&1; check 'var list' $?
  port=$((20000 + i))
  node "$BIN" start --data-dir "$D" --port "$port" >"$WORK/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do grep -q 'listening' "$WORK/log" 2>/dev/null && break; sleep 0.05; done
  kill -TERM "$pid"; wait "$pid"; rc=$?
  # our own SIGTERM is a clean end whether the server exits 0 or 143
  [ "$rc" -eq 143 ] && rc=0
  check start $rc
done
echo "runs=$N processes=$processes crashes=$crashes failures=$failures seconds=$(( $(date +%s) - start ))"
[ "$crashes" -eq 0 ] && [ "$failures" -eq 0 ]
