#!/usr/bin/env bash
# Crash safety of the tally daemon: during a simulated poll, kill -9 the daemon at random moments
# and restart it with --resume. Every ballot that `clicker-tally results` reported before a kill must
# still be there afterwards (same voter, same or higher sequence).
#
#   Tests/crash/run.sh            300 voters, 20 kills (the figure in README.md and docs/PERFORMANCE.md)
#   Tests/crash/run.sh --small    60 voters, 5 kills (CI)
#
# Runs on a private dbus-daemon; the daemon's database lives in a temporary directory.
# Prints "crash-safety: N passed, M failed" (one test per kill) and the totals.
set -uo pipefail
cd "$(dirname "$0")/../.."
VOTERS=300; KILLS=20; SEED=${SEED:-$RANDOM}
[ "${1:-}" = "--small" ] && { VOTERS=60; KILLS=5; }
command -v dbus-daemon >/dev/null || { echo "dbus-daemon missing: apt-get install dbus-daemon"; echo "crash-safety: 0 passed, 1 failed"; exit 1; }
swift build --product clicker-tally >/dev/null 2>&1 || { echo "build failed"; echo "crash-safety: 0 passed, 1 failed"; exit 1; }
W=$(mktemp -d)
# A private copy, so a rebuild during the run cannot disturb it.
cp "$(swift build --show-bin-path)/clicker-tally" "$W/clicker-tally"; BIN=$W/clicker-tally
Tests/Harness/private-bus.sh "$W" > "$W/bus.addr" 2>"$W/bus.log" &
BUSPID=$!
for _ in $(seq 100); do [ -S "$W/bus" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$W/bus XDG_STATE_HOME=$W/state XDG_RUNTIME_DIR=$W
DPID=
cleanup() { [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null; kill "$BUSPID" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT

start_daemon() {  # ROUND (after round 0 the daemon continues the open poll: --resume)
  local resume=; [ "$1" -gt 0 ] && resume=--resume
  "$BIN" daemon --simulate "$VOTERS" --seed $((SEED + $1)) --simulate-speed 8 --no-gatt-confirm $resume \
    --air "$W/air.sock" >> "$W/daemon.log" 2>&1 &
  DPID=$!
  for _ in $(seq 100); do "$BIN" status >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "daemon did not come up"; tail -5 "$W/daemon.log"; return 1
}
results() { "$BIN" results --json 2>/dev/null; }

# keys "voter sequence answer" of a results JSON
rows() { python3 -c 'import json,sys
for b in json.load(sys.stdin)["ballots"]: print(b["voter"], b["sequence"], b["answer"])'; }

pass=0; fail=0; checked=0; lost=0; kills=0
start_daemon 0 || { echo "crash-safety: 0 passed, 1 failed"; exit 1; }
for round in $(seq 1 "$KILLS"); do
  # Let votes arrive for a random 0.5-3.5 s, reading results all the while.
  end=$(( $(date +%s%N) + (500 + RANDOM % 3000) * 1000000 ))
  : > "$W/seen"
  # (and at least until something has been reported, so that every kill has ballots to check)
  deadline=$(( $(date +%s%N) + 20 * 1000000000 ))
  while [ "$(date +%s%N)" -lt "$end" ] || { [ ! -s "$W/seen" ] && [ "$(date +%s%N)" -lt "$deadline" ]; }; do
    r=$(results) && echo "$r" | rows > "$W/last" && cat "$W/last" >> "$W/seen"
    sleep 0.$((RANDOM % 3))
  done
  sort -u "$W/seen" > "$W/reported"
  kill -9 "$DPID"; wait "$DPID" 2>/dev/null; DPID=; kills=$((kills + 1))
  start_daemon "$round" || { fail=$((fail + 1)); break; }
  results | rows > "$W/after"
  n=$(wc -l < "$W/reported")
  # Every reported (voter, sequence) must be present with the same or a higher sequence.
  missing=$(python3 - "$W/reported" "$W/after" <<'PY'
import sys
after = {}
for line in open(sys.argv[2]):
    v, s, a = line.split()
    after[v] = (int(s), a)
missing = 0
for line in open(sys.argv[1]):
    v, s, a = line.split()
    got = after.get(v)
    if got is None or got[0] < int(s) or (got[0] == int(s) and got[1] != a):
        missing += 1
        print("lost:", v, s, a, "now", got, file=sys.stderr)
print(missing)
PY
)
  checked=$((checked + n)); lost=$((lost + missing))
  voters=$(wc -l < "$W/after")
  if [ "$missing" -eq 0 ] && [ "$n" -gt 0 ]; then
    pass=$((pass + 1)); echo "kill $round: ok, $n reported ballots all present after restart ($voters voters now)"
  else
    fail=$((fail + 1)); echo "kill $round: FAIL, $missing of $n reported ballots lost"
  fi
done
echo "crash-safety totals: $kills kills, $checked reported ballot observations checked, $lost lost (voters $VOTERS per round, seed $SEED)"
echo "crash-safety: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
