#!/bin/bash
# main.sh - runs the selected scenarios in sequence (one boot) and writes the result
# file the host reads: /mnt/host/results.txt. The host trusts nothing else: a scenario
# without a RESULT line in that file, or a file without this run's nonce, is a failure.
set -u
. /e2e/lib.sh
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | head -n1; }
NONCE=$(arg e2e.run); SCENARIOS=$(arg e2e.scenarios | tr ',' ' ')
STIMEOUT=$(arg e2e.timeout); STIMEOUT=${STIMEOUT:-420}
E2E_BTMON=$(arg e2e.btmon); E2E_SETTLE=$(arg e2e.settle); E2E_DISCOVERY_RESTART=$(arg e2e.restart)
export E2E_BTMON E2E_SETTLE=${E2E_SETTLE:-8} E2E_DISCOVERY_RESTART=${E2E_DISCOVERY_RESTART:-2}
RES=/mnt/host/results.txt
OUT=/mnt/host/logs
mkdir -p "$OUT"
res() { echo "$*" >> "$RES"; sync; }
res "RUN $NONCE"
res "BOOT $(up)"
mkdir -p /tmp/e2e

t=$(up)
if ! stack_setup > /tmp/e2e/setup.log 2>&1; then
  cat /tmp/e2e/setup.log
  res "SETUP FAIL $(since "$t")"
  for s in $SCENARIOS; do res "RESULT $s FAIL 0 bluetooth stack setup failed (see setup.log)"; done
  cp /tmp/e2e/*.log "$OUT"/ 2>/dev/null
  res "END"; exit 1
fi
cat /tmp/e2e/setup.log
res "SETUP ok $(since "$t")"

for s in $SCENARIOS; do
  D=/tmp/e2e/$s; rm -rf "$D"; mkdir -p "$D"; : > "$D/checks"
  echo "=== scenario $s ==="
  t=$(up)
  : > /tmp/e2e/bluetoothd.log
  want=$(awk -v s="$s" '$1==s {print $3}' /e2e/scenarios.txt)
  if stack_reset "${want:-le}" > "$D/reset.log" 2>&1; then
    E2E_SCENARIO=$s E2E_CONTROLLERS=$CONTROLLERS D=$D timeout -k 5 "$STIMEOUT" /bin/bash /e2e/scenarios.sh "$s" 2>&1 | tee "$D/run.log"
    rc=${PIPESTATUS[0]}
  else
    cat "$D/reset.log"; echo "FAIL: could not reset the bluetooth stack before the scenario" >> "$D/checks"; rc=1
  fi
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "FAIL: scenario timed out after ${STIMEOUT}s" >> "$D/checks"
  for p in $(cat "$D/pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done   # left behind by a timeout
  ok=$(grep -c '^ok:' "$D/checks"); bad=$(grep -c '^FAIL:' "$D/checks")
  if [ "$rc" = 0 ] && [ "$ok" -gt 0 ] && [ "$bad" = 0 ]; then verdict=PASS; else verdict=FAIL; fi
  why="$ok checks ok, $bad failed, exit $rc"
  [ "$ok" = 0 ] && [ "$bad" = 0 ] && why="no checks ran (exit $rc)"
  systemd_guest && journalctl -b -o short-monotonic -u bluetooth.service > /tmp/e2e/bluetoothd.log 2>&1
  cp /tmp/e2e/bluetoothd.log "$D/" 2>/dev/null
  # regular files only: 9p refuses FIFOs
  (cd "$D" && find . -type f) | while read -r f; do mkdir -p "$OUT/$s/$(dirname "$f")"; cp "$D/$f" "$OUT/$s/$f"; done
  res "RESULT $s $verdict $(since "$t") $why"
  echo "=== scenario $s: $verdict ($why) in $(since "$t")s ==="
done
cp /tmp/e2e/*.log /tmp/e2e/*.btsnoop "$OUT"/ 2>/dev/null
res "END"
