#!/usr/bin/env bash
# The projector server's cost with 200 browsers (issue target: at most 5 % of a core added at
# 100 votes/s, and no vote slower to commit). Starts a private dbus-daemon and
#     clicker-tally daemon --simulate 300 --simulate-speed 10 --simulate-churn 100 --no-gatt-confirm \
#                          --air SOCK --web 127.0.0.1:0 --bus system
# then tools/measure-web.py alternates windows with 0 and 200 event-stream clients on loopback
# and prints the daemon's CPU per window, the added CPU, and commit latency with and without them
# (the method is described at the top of measure-web.py). A measurement, not a test: not in test.sh.
#
#   tools/measure-web.sh                               release build (as scripts/install.sh builds)
#   CONFIG=debug REPEATS=3 WINDOW=20 PROBES=10 CLIENTS=200 tools/measure-web.sh
set -uo pipefail
cd "$(dirname "$0")/.."
for tool in dbus-daemon /usr/bin/python3; do
  command -v $tool >/dev/null || { echo "$tool is missing (scripts/setup.sh --test)"; exit 1; }
done
/usr/bin/python3 -c "import dbus" 2>/dev/null || { echo "python3-dbus is missing (scripts/setup.sh --test)"; exit 1; }
CONFIG=${CONFIG:-release}
BUILD=(swift build -c "$CONFIG")
[ "$CONFIG" = release ] && BUILD=(scripts/release-build.sh)   # as scripts/install.sh
for p in clicker-tally clicker-vote; do
  "${BUILD[@]}" --product $p >/dev/null 2>&1 || { echo "build failed: ${BUILD[*]} --product $p"; exit 1; }
done
BINDIR=$("${BUILD[@]}" --show-bin-path)
W=$(mktemp -d)
CODE=4821-K7QXM-3PF9A
BUSPID=; DPID=
cleanup() {
  [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
  [ -n "$BUSPID" ] && kill "$BUSPID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$W XDG_STATE_HOME=$W/state
Tests/Harness/private-bus.sh "$W" > "$W/bus.addr" 2>"$W/bus.log" &
BUSPID=$!
for _ in $(seq 100); do [ -S "$W/bus" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$W/bus
"$BINDIR/clicker-tally" daemon --simulate 300 --simulate-speed 10 --simulate-churn 100 --no-gatt-confirm --seed 11 \
  --join-code "$CODE" --air "$W/air.sock" --web 127.0.0.1:0 --bus system > "$W/daemon.log" 2>&1 &
DPID=$!
URL=
for _ in $(seq 300); do
  URL=$(grep -oE 'projector page: http://[^ ]+' "$W/daemon.log" | head -1 | sed 's/projector page: //')
  [ -n "$URL" ] && "$BINDIR/clicker-tally" status >/dev/null 2>&1 && break
  sleep 0.1
done
[ -n "$URL" ] || { echo "the daemon did not start its projector page"; tail -5 "$W/daemon.log"; exit 1; }
echo "measure-web: $CONFIG build, daemon pid $DPID, page $URL, $(nproc) cores"
# Warm-up: every simulated student has voted and the churn is running.
sleep "${WARMUP:-8}"
/usr/bin/python3 tools/measure-web.py "$DPID" "$BINDIR/clicker-vote" "$W/air.sock" "$CODE" "$URL" "$W/probe-state"
