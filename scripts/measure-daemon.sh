#!/usr/bin/env bash
# Two resource figures of the instructor's side, measured so they survive a noisy shared machine.
#
# 1. Live-view cost at 300 voters and ~100 votes/s (requirement: at most 2 % of a core).
#    The same simulated poll runs twice: once with the full-screen view in a private tmux server
#    (an 80x24 pane), once with --json (no view at all):
#        clicker-tally --simulate 300 --simulate-speed 10 --simulate-churn 100 --no-store --seed S \
#                      --join-code 4821-K7QXM-3PF9A --duration D [--json]
#    --simulate-churn 100 makes the simulated students keep changing answers so ~100 ballots/s arrive.
#    After a warm-up (everyone has voted, churn is running) the process's own CPU time
#    (utime+stime from /proc/<pid>/stat, in clock ticks) is read at the start and the end of a
#    window; CPU seconds / wall seconds is its load in cores. CPU time only counts while the process
#    runs, so other jobs on the machine do not inflate it (they only slow it down). Runs alternate
#    view / no view, REPEATS times each; the figure is median(view) - median(no view). The
#    tmux server's own CPU (the terminal emulator, not ours) is printed separately.
#    The simulated air and the 300 simulated students live in the measured process in both runs,
#    so they cancel out in the difference but make the base load (and its noise) large.
#
# 2. Daemon RSS with 1,000 voters (requirement: 30 MB or less).
#        clicker-tally daemon --simulate 1000 --simulate-speed 10 --seed S --bus unix:path=<private bus>
#    on a private dbus-daemon and a temporary database; once `clicker-tally results --json` shows
#    the voter count has stopped growing (all simulated students counted), VmRSS and VmHWM are read
#    from /proc/<pid>/status. Repeated RSS_REPEATS times, medians printed. The same is done with
#    --simulate 0 (the daemon with nothing to count) for scale. NOTE: with --simulate the simulated
#    air and the 1,000 simulated students (their sessions, keys and advertising state) live in the
#    daemon's process, so the 1,000-voter figure is an upper bound for a daemon fed by a real radio.
#
#   scripts/measure-daemon.sh                 both (about 8 minutes)
#   scripts/measure-daemon.sh --view|--rss    one of them
#   REPEATS=5 WINDOW=20 WARMUP=8 RSS_REPEATS=3 CONFIG=release scripts/measure-daemon.sh
set -uo pipefail
cd "$(dirname "$0")/.."
REPEATS=${REPEATS:-5}; WINDOW=${WINDOW:-20}; WARMUP=${WARMUP:-8}; RSS_REPEATS=${RSS_REPEATS:-3}
SEED=${SEED:-11}; CODE=4821-K7QXM-3PF9A
WHAT=${1:-all}
for tool in tmux dbus-daemon python3; do
  command -v $tool >/dev/null || { echo "$tool is missing (apt-get install tmux dbus-daemon)"; exit 1; }
done
CONFIG=${CONFIG:-release}   # figures are for the release build; CONFIG=debug for a quick try
swift build -c "$CONFIG" --product clicker-tally >/dev/null 2>&1 || { echo "build failed: swift build -c $CONFIG --product clicker-tally"; exit 1; }
BIN=$(swift build -c "$CONFIG" --show-bin-path)/clicker-tally
TICK=$(getconf CLK_TCK)
W=$(mktemp -d)
TM="tmux -L measure-$$"
BUSPID=; DPID=; JPID=
cleanup() {
  [ -n "$DPID" ] && kill "$DPID" 2>/dev/null
  [ -n "$JPID" ] && kill "$JPID" 2>/dev/null
  $TM kill-server 2>/dev/null
  [ -n "$BUSPID" ] && kill "$BUSPID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$W XDG_STATE_HOME=$W/state

# CPU ticks (utime + stime) of PID.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }
now() { date +%s.%N; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# cores = ticks / TICK / seconds
load() { awk -v t="$1" -v s="$2" -v k="$TICK" 'BEGIN { printf "%.4f", t / k / s }'; }

WORK=(--simulate 300 --simulate-speed 10 --simulate-churn 100 --no-store --seed "$SEED" --join-code "$CODE")
DURATION=$((WARMUP + WINDOW + 3))

measure_window() {  # PID -> prints "cores"
  local pid=$1 t0 t1 c0 c1
  sleep "$WARMUP"
  c0=$(ticks "$pid"); t0=$(now)
  sleep "$WINDOW"
  c1=$(ticks "$pid"); t1=$(now)
  [ -n "$c0" ] && [ -n "$c1" ] || { echo "nan"; return; }
  load $((c1 - c0)) "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}

view_run() {  # I -> appends to $W/view, $W/tmux, $W/rate
  local i=$1 pid spid s0 s1
  $TM new-session -d -s v -x 80 -y 24 "sh -c 'echo \$\$ > $W/view.pid; exec $BIN ${WORK[*]} --duration $DURATION 2>$W/view.err'"
  for _ in $(seq 50); do [ -s "$W/view.pid" ] && break; sleep 0.1; done
  pid=$(cat "$W/view.pid"); rm -f "$W/view.pid"
  spid=$($TM display-message -p '#{pid}')
  s0=$(ticks "$spid")
  measure_window "$pid" >> "$W/view"
  s1=$(ticks "$spid")
  $TM capture-pane -p -t v > "$W/screen.$i"
  load $((s1 - s0)) $((WARMUP + WINDOW)) >> "$W/tmux"; echo >> "$W/tmux"
  grep -oE 'Votes/s [0-9.]+' "$W/screen.$i" | awk '{ print $2 }' >> "$W/rate"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  $TM kill-server 2>/dev/null
  echo >> "$W/view"
}

json_run() {
  "$BIN" "${WORK[@]}" --duration "$DURATION" --json > "$W/json.out" 2> "$W/json.err" &
  JPID=$!
  measure_window "$JPID" >> "$W/json"; echo >> "$W/json"
  wait "$JPID"; JPID=
}

view_cost() {
  : > "$W/view"; : > "$W/json"; : > "$W/tmux"; : > "$W/rate"
  echo "live-view cost: 300 voters, churn 100 votes/s, $REPEATS x (view, no view), warm-up ${WARMUP}s, window ${WINDOW}s"
  for i in $(seq "$REPEATS"); do
    view_run "$i"; json_run
    echo "  run $i: with view $(sed -n "${i}p" "$W/view") cores, without $(sed -n "${i}p" "$W/json") cores" \
         "(rate on screen $(sed -n "${i}p" "$W/rate") votes/s, tmux server $(sed -n "${i}p" "$W/tmux") cores)"
  done
  local v j d
  v=$(grep -v '^$' "$W/view" | median); j=$(grep -v '^$' "$W/json" | median)
  d=$(paste "$W/view" "$W/json" | awk 'NF == 2 { print $1 - $2 }' | median)
  echo "  last screen:"; sed 's/^/    | /' "$W/screen.$REPEATS"
  echo "  final results (no-view run): $(tail -c 300 "$W/json.out")"
  printf 'live-view: median with view %.4f cores, without %.4f cores; view cost %.2f %% of a core (median of paired differences %.2f %%); tmux server %.2f %%; votes/s on screen (median) %s\n' \
    "$v" "$j" "$(awk -v a="$v" -v b="$j" 'BEGIN { print (a - b) * 100 }')" "$(awk -v d="$d" 'BEGIN { print d * 100 }')" \
    "$(grep -v '^$' "$W/tmux" | median | awk '{ print $1 * 100 }')" "$(median < "$W/rate")"
}

start_bus() {
  Tests/Harness/private-bus.sh "$W" > "$W/bus.addr" 2>"$W/bus.log" &
  BUSPID=$!
  for _ in $(seq 100); do [ -S "$W/bus" ] && break; sleep 0.05; done
  [ -S "$W/bus" ] || { echo "dbus-daemon failed"; exit 1; }
  export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$W/bus
}

voters() { "$BIN" results --json 2>/dev/null | python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("voters", len(d.get("ballots", []))))' 2>/dev/null; }

rss_run() {  # N -> prints "rss_kB hwm_kB voters anon_kB file_kB"
  local n=$1 last=-1 same=0 v
  rm -rf "$W/state"
  "$BIN" daemon --simulate "$n" --simulate-speed 10 --seed "$SEED" --bus "unix:path=$W/bus" --air "$W/air.sock" \
    > "$W/daemon.log" 2>&1 &
  DPID=$!
  # Counted when the voter count has not moved for 3 s (the room votes within ~4 s at speed 10).
  for _ in $(seq 120); do
    sleep 1
    v=$(voters); [ -n "$v" ] || continue
    if [ "$v" = "$last" ]; then same=$((same + 1)); else same=0; last=$v; fi
    [ "$same" -ge 3 ] && break
  done
  sleep 1
  local st=/proc/$DPID/status
  echo "$(awk '/^VmRSS/ { print $2 }' $st) $(awk '/^VmHWM/ { print $2 }' $st) $last $(awk '/^RssAnon/ { print $2 }' $st) $(awk '/^RssFile/ { print $2 }' $st)"
  kill "$DPID"; wait "$DPID" 2>/dev/null; DPID=
}

rss() {
  start_bus
  for n in 1000 0; do
    : > "$W/rss.$n"
    for i in $(seq "$RSS_REPEATS"); do
      r=$(rss_run "$n"); echo "$r" >> "$W/rss.$n"
      echo "  daemon --simulate $n, run $i: VmRSS $(echo "$r" | awk '{ print $1 }') kB (anonymous $(echo "$r" | awk '{ print $4 }') kB," \
           "file-backed $(echo "$r" | awk '{ print $5 }') kB), VmHWM $(echo "$r" | awk '{ print $2 }') kB, $(echo "$r" | awk '{ print $3 }') voters counted"
    done
    printf 'daemon RSS, --simulate %d: median VmRSS %.1f MB (anonymous %.1f MB), VmHWM %.1f MB (MB = 1,000,000 bytes; %s voters counted)\n' "$n" \
      "$(awk '{ print $1 }' "$W/rss.$n" | median | awk '{ print $1 * 1024 / 1e6 }')" \
      "$(awk '{ print $4 }' "$W/rss.$n" | median | awk '{ print $1 * 1024 / 1e6 }')" \
      "$(awk '{ print $2 }' "$W/rss.$n" | median | awk '{ print $1 * 1024 / 1e6 }')" \
      "$(awk '{ print $3 }' "$W/rss.$n" | median)"
  done
}

case "$WHAT" in
  --view) view_cost ;;
  --rss) rss ;;
  *) view_cost; rss ;;
esac
