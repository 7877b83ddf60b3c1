#!/usr/bin/env bash
# Checks the tally's trimmed ICU data (Sources/ICUData/README.md). Fails unless
#   - the release tally's icudt76_dat is the package of Sources/ICUData (not ICU's full 34 MB), and
#   - the tally, run through its commands, looks up no ICU data item that Sources/ICUData/items.txt
#     does not list (gdb stops where ICU looks an item up in its package and prints its name).
# The commands: a simulated poll with a database and a question set, --resume, the daemon with a
# simulated room and the projector page, the clients status, results, next, close and export
# against it, and a roster import and list.
#   scripts/check-icu.sh [BINARY]     (default: builds it with scripts/release-build.sh; clicker-vote
#                                      beside it makes the roster's enrollment codes)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in gdb dbus-daemon nm python3; do
  command -v $tool >/dev/null || { echo "check-icu: $tool is missing (scripts/setup.sh --test installs it)"; exit 1; }
done
BIN=${1:-}
if [ -z "$BIN" ]; then
  # clicker-vote too: its `enroll` makes the roster's enrollment codes.
  for p in clicker-tally clicker-vote; do scripts/release-build.sh --product $p >/dev/null; done
  BIN=$(scripts/release-build.sh --show-bin-path)/clicker-tally
fi
VOTE=$(dirname "$BIN")/clicker-vote
[ -x "$VOTE" ] || { echo "check-icu: $VOTE is missing (it makes the roster's enrollment codes)"; exit 1; }
DAT=$(echo Sources/ICUData/icudt*.dat)
read -r linked symbol < <(nm -S "$BIN" | awk '$4 ~ /^icudt[0-9]+_dat$/ { print $2, $4 }')
if [ "$((16#${linked:-0}))" != "$(stat -c %s "$DAT")" ]; then
  echo "FAIL: $BIN links ${symbol:-no ICU data} of $((16#${linked:-0})) bytes, not $DAT ($(stat -c %s "$DAT") bytes)"
  echo "      (another ICU version? Sources/ICUData/README.md, \"When it changes\")"
  exit 1
fi
echo "check-icu: $BIN links $DAT as $symbol ($(stat -c %s "$DAT") bytes)"

# The register holding a function's second argument, the name ICU looks up.
case $(uname -m) in
  x86_64) NAME_REGISTER='$rsi' ;;
  aarch64) NAME_REGISTER='$x1' ;;
  *) echo "check-icu: which register holds the second argument on $(uname -m)?"; exit 1 ;;
esac
W=$(mktemp -d)
BUSPID=""
cleanup() {
  local rc=$?
  if [ -n "$BUSPID" ]; then kill "$BUSPID" 2>/dev/null || true; fi
  pkill -f "dbus-daemon.*$W" 2>/dev/null || true
  rm -rf "$W"
  exit $rc
}
trap cleanup EXIT
cat > "$W/trace.gdb" <<GDB
set pagination off
set confirm off
set print thread-events off
set print inferior-events off
handle SIGTERM nostop noprint pass
handle SIGPIPE nostop noprint pass
break offsetTOCLookupFn
commands
silent
printf "ICU-ITEM %s\n", (char *)$NAME_REGISTER
continue
end
run
GDB
GDB=(gdb -q -batch -iex "set complaints 0" -iex "set debuginfod enabled off" -x "$W/trace.gdb" --args "$BIN")
fail() { echo "FAIL: $*"; tail -40 "$W/trace.log"; exit 1; }
# traced ARGS...: runs clicker-tally ARGS under gdb, adding its output to trace.log; fails if it fails.
traced() {
  echo "== clicker-tally $*" >> "$W/trace.log"
  "${GDB[@]}" "$@" >> "$W/trace.log" 2>&1
  tail -3 "$W/trace.log" | grep -q "exited normally" || fail "clicker-tally $* failed"
}

cat > "$W/questions.yaml" <<'YAML'
questions:
  - title: "Largest city?"
    kind: single
    options: [Paris, Rome, Oslo]
  - title: "Rank them"
    kind: ranked
    options: [A, B, C]
  - title: "Temperature"
    kind: numeric
    range: "-2.5..2.5"
    decimals: 1
YAML
export HOME=$W XDG_DATA_HOME=$W/data
traced --simulate 20 --simulate-speed 10 --duration 4 --json --air "$W/run-air.sock" --db "$W/run.sqlite" --questions "$W/questions.yaml"
traced --simulate 20 --simulate-speed 10 --duration 2 --json --air "$W/run-air.sock" --db "$W/run.sqlite" --resume

Tests/Harness/private-bus.sh "$W" > "$W/bus.addr" 2> "$W/bus.log" & BUSPID=$!
for _ in $(seq 100); do [ -S "$W/bus" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$W/bus
"${GDB[@]}" daemon --simulate 20 --simulate-speed 10 --bus system --air "$W/air.sock" \
  --web 127.0.0.1:0 --questions "$W/questions.yaml" --db "$W/daemon.sqlite" > "$W/daemon.log" 2>&1 &
GDBPID=$!
url=""
for _ in $(seq 600); do
  url=$(grep -o 'projector page: http://[0-9.:]*/' "$W/daemon.log" | head -1 | sed 's/projector page: //') || true
  [ -n "$url" ] && break; sleep 0.1
done
[ -n "$url" ] || { cat "$W/daemon.log" >> "$W/trace.log"; fail "the daemon did not serve the projector page"; }
python3 -c 'import sys, urllib.request; page = urllib.request.urlopen(sys.argv[1], timeout=10).read(); sys.exit(0 if b"<html" in page else 1)' "$url" \
  || fail "the projector page did not load from $url"
sleep 2
for command in "status --json" "status" "results --json" "results" "next" "next" "results --json" "close" "export $W/exports"; do
  # shellcheck disable=SC2086
  traced $command
done
ls "$W/exports"/*.csv "$W/exports"/*.json > /dev/null 2>&1 || fail "the export wrote no files"
kill -TERM "$(pgrep -P $GDBPID -x clicker-tally)" 2>/dev/null || true
wait $GDBPID || true
cat "$W/daemon.log" >> "$W/trace.log"

for i in 1 2; do
  HOME=$W/v$i XDG_STATE_HOME=$W/v$i XDG_DATA_HOME=$W/v$i XDG_CONFIG_HOME=$W/v$i "$VOTE" enroll > "$W/enroll$i" 2>&1 \
    || { cat "$W/enroll$i" >> "$W/trace.log"; fail "clicker-vote enroll failed"; }
  tail -1 "$W/enroll$i" > "$W/code$i"
done
printf 'Ada Lovelace,A0001,%s\nÉmile Zola,B0002,%s\n' "$(cat "$W/code1")" "$(cat "$W/code2")" > "$W/roster.csv"
traced roster import "$W/roster.csv" --db "$W/roster.sqlite"
traced roster list --db "$W/roster.sqlite"
grep -q "Émile Zola" "$W/trace.log" || fail "roster list did not list the imported students"

prefix=$(basename "$DAT" .dat)
python3 - "$W/trace.log" Sources/ICUData/items.txt "$prefix" <<'PY'
import sys
log, items_path, prefix = sys.argv[1:]
listed = {prefix + "/" + l.split("#")[0].strip() for l in open(items_path) if l.split("#")[0].strip()}
looked_up = [l.split(" ", 1)[1].strip() for l in open(log, errors="replace") if l.startswith("ICU-ITEM ")]
unlisted = sorted(set(looked_up) - listed)
print(f"check-icu: {len(looked_up)} look-ups of {len(set(looked_up))} items: {', '.join(sorted(set(looked_up)))}")
if not looked_up:
    sys.exit("FAIL: no ICU look-up seen at all: the breakpoint did not fire (the projector page looks up time zones)")
if unlisted:
    sys.exit("FAIL: the tally looked up ICU data that Sources/ICUData/items.txt does not list: " + ", ".join(unlisted)
             + "\n      add them there and run scripts/icu-data.py (Sources/ICUData/README.md)")
print("check-icu: 1 passed, 0 failed")
PY
