#!/usr/bin/env bash
# Smoke test of the live view as a person sees it: clicker-tally --simulate 40 runs in a tmux
# pane of 80x24; keys are sent; the captured screen is checked. Prints "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
command -v tmux >/dev/null || { echo "tmux is missing: apt-get install tmux"; echo "0 passed, 1 failed"; exit 1; }
swift build --product clicker-tally >/dev/null 2>&1 || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
BIN=$(swift build --show-bin-path)/clicker-tally
W=$(mktemp -d); S=clicker-smoke-$$
export XDG_RUNTIME_DIR=$W XDG_STATE_HOME=$W/state
trap 'tmux kill-session -t $S 2>/dev/null; rm -rf "$W"' EXIT
pass=0; fail=0
check() {  # DESCRIPTION PATTERN [absent]
  if grep -qE "$2" "$W/screen"; then found=1; else found=0; fi
  if [ "${3:-}" = absent ]; then found=$((1 - found)); fi
  if [ $found = 1 ]; then pass=$((pass + 1)); echo "ok: $1"; else fail=$((fail + 1)); echo "FAIL: $1 (/$2/)"; cat "$W/screen"; fi
}
snap() { sleep "${1:-1}"; tmux capture-pane -p -t "$S" > "$W/screen"; }
wait_for() {  # PATTERN SECONDS
  for _ in $(seq $(( $2 * 2 ))); do snap 0.5; grep -qE "$1" "$W/screen" && return 0; done; return 1
}

tmux new-session -d -s "$S" -x 80 -y 24 "$BIN --simulate 40 --seed 3 --join-code 4821-ABCDE-FGHJK 2>$W/stderr; echo EXITED-\$?; sleep 30"
wait_for 'Voters [1-9]' 30
check "the join code is on screen" '4821'
check "question 1 is open" 'OPEN|open for'
check "bars A-D with counts and percentages" 'A .*[0-9]+ +[0-9.]+%'
check "voters are counted" 'Voters [1-9][0-9]*'
check "the radio line names the simulated air" 'simulated air'
check "the key legend is shown" 'q +quit'
tmux send-keys -t "$S" h; snap 1
check "h hides the bars while the question is open" 'votes hidden'
check "hidden: no percentages on screen" '[0-9]+\.[0-9]%' absent
tmux send-keys -t "$S" h; tmux send-keys -t "$S" c; snap 1
check "c closes the question" 'CLOSED|closed'
tmux send-keys -t "$S" n; snap 1
check "n opens question 2" 'Question 2'
tmux send-keys -t "$S" q; snap 1
check "q while a question is open asks for confirmation" 'Quit anyway\?'
tmux send-keys -t "$S" y; wait_for 'EXITED-0' 10
check "y quits cleanly with status 0" 'EXITED-0'
echo "live view: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
