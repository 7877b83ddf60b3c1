#!/usr/bin/env bash
# The CPU an idle `clicker-vote` costs while it follows the beacon (docs/PERFORMANCE.md, "Idle
# following voter"): a tally on the shared simulated air (`clicker-tally --radio sim`, in a tmux
# pane, since its keys close the question) and N `clicker-vote --radio sim JOIN-CODE B` followers.
#   counted: every follower answered question 1 and shows "counted B"; nothing changes any more.
#   closed:  the tally closed the question (key c); every follower shows "question-closed 1".
# In each phase, over SECONDS: each process's CPU (utime + stime from /proc/PID/stat, in % of one
# core), its context switches (voluntary + involuntary, every thread, from /proc/PID/task/*/status:
# each is a wake-up) and its read() calls (/proc/PID/io syscr: reports from the air, timer and
# eventfd reads). Not part of the CI run (a few minutes).
#
#   tools/measure-follower.sh [--voters 40] [--seconds 60] [--bin-dir DIR]
# DIR holds release binaries of clicker-tally and clicker-vote (default: the directory
# `scripts/release-build.sh --show-bin-path` prints; build them first).
set -euo pipefail
cd "$(dirname "$0")/.."
VOTERS=40 SECONDS_=60 BIN=
while [ $# -gt 0 ]; do
  case "$1" in
    --voters) VOTERS=$2; shift 2 ;;
    --seconds) SECONDS_=$2; shift 2 ;;
    --bin-dir) BIN=$2; shift 2 ;;
    *) echo "usage: $0 [--voters N] [--seconds S] [--bin-dir DIR]" >&2; exit 2 ;;
  esac
done
[ -n "$BIN" ] || BIN=$(scripts/release-build.sh --show-bin-path)
for b in clicker-tally clicker-vote; do
  [ -x "$BIN/$b" ] || { echo "no $BIN/$b: run scripts/release-build.sh --product $b first" >&2; exit 1; }
done
command -v tmux >/dev/null || { echo "tmux is missing: apt-get install tmux" >&2; exit 1; }

W=$(mktemp -d) S=clicker-follow-$$ CODE=4821-ABCDE-FGHJK
export XDG_RUNTIME_DIR=$W
VOTER_PIDS=()
cleanup() {
  for p in "${VOTER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  tmux kill-session -t "$S" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT

tmux new-session -d -s "$S" -x 80 -y 24 \
  "XDG_STATE_HOME=$W/tally '$BIN/clicker-tally' --radio sim --air '$W/air.sock' --no-store --join-code $CODE 2>'$W/tally.err'"
for _ in $(seq 100); do [ -S "$W/air.sock" ] && break; sleep 0.2; done
[ -S "$W/air.sock" ] || { echo "the tally did not open the air" >&2; cat "$W/tally.err" >&2; exit 1; }
TALLY=$(tmux list-panes -t "$S" -F '#{pane_pid}')
TALLY=$(pgrep -P "$TALLY" -x clicker-tally || echo "$TALLY")

for i in $(seq "$VOTERS"); do
  mkdir -p "$W/v$i"
  XDG_STATE_HOME=$W/v$i "$BIN/clicker-vote" --radio sim --air "$W/air.sock" $CODE B >"$W/v$i/out" 2>"$W/v$i/err" </dev/null &
  VOTER_PIDS+=($!)
done

wait_all() {  # PATTERN: every follower's last line matches
  for _ in $(seq 300); do
    local n=0
    for i in $(seq "$VOTERS"); do tail -n1 "$W/v$i/out" 2>/dev/null | grep -q "$1" && n=$((n + 1)); done
    [ "$n" -eq "$VOTERS" ] && return 0
    sleep 1
  done
  echo "only $n of $VOTERS followers show '$1'" >&2; return 1
}

snapshot() {  # PID -> "ticks ctxt syscr"
  local p=$1 s
  s=$(sed 's/.*) //' "/proc/$p/stat")
  set -- $s
  echo "$(( ${12} + ${13} )) $(cat /proc/$p/task/*/status 2>/dev/null | awk '/ctxt_switches/{n+=$2} END{print n}') $(awk '/syscr/{print $2}' /proc/$p/io)"
}

measure() {  # PHASE
  local tck; tck=$(getconf CLK_TCK)
  declare -A before
  for p in "${VOTER_PIDS[@]}" "$TALLY"; do before[$p]=$(snapshot "$p"); done
  sleep "$SECONDS_"
  for p in "${VOTER_PIDS[@]}"; do
    read -r t0 c0 r0 <<<"${before[$p]}"; read -r t1 c1 r1 <<<"$(snapshot "$p")"
    echo "$1 voter $(( t1 - t0 )) $(( c1 - c0 )) $(( r1 - r0 ))"
  done
  read -r t0 c0 r0 <<<"${before[$TALLY]}"; read -r t1 c1 r1 <<<"$(snapshot "$TALLY")"
  echo "$1 tally $(( t1 - t0 )) $(( c1 - c0 )) $(( r1 - r0 ))"
} > "$W/$1.raw"

report() {  # PHASE
  sort -t' ' -k3n "$W/$1.raw" | awk -v T="$SECONDS_" -v tck="$(getconf CLK_TCK)" -v phase="$1" '
    $2 == "voter" { cpu[n] = 100 * $3 / tck / T; sum += cpu[n]; cs += $4 / T; rd += $5 / T; n++ }
    $2 == "tally" { tally = sprintf("tally %.2f %% of a core, %.0f context switches/s", 100 * $3 / tck / T, $4 / T) }
    END {
      printf "%-8s %d followers over %d s: %.3f %% of a core each (median %.3f, max %.3f; all together %.2f %%), %.1f context switches/s and %.1f reads/s each; %s\n",
        phase, n, T, sum / n, cpu[int((n - 1) / 2)], cpu[n - 1], sum, cs / n, rd / n, tally
    }'
}

wait_all '^counted B'
sleep 5
measure counted
report counted
tmux send-keys -t "$S" c
wait_all '^question-closed 1'
sleep 5
measure closed
report closed
