#!/usr/bin/env bash
# The projector page in a real headless browser (Debian's chromium and chromedriver, selenium from
# PyPI; scripts/setup.sh --test installs them, this script installs nothing). Starts a private
# dbus-daemon and
#     clicker-tally daemon --radio sim --air SOCK --questions lecture.yaml --web 127.0.0.1:0 \
#                          --no-gatt-confirm --bus system
# then Tests/browser/projector_test.py casts votes with clicker-vote --radio sim, reads the page's
# DOM, hides the results through D-Bus, takes the screenshots projector-1920.png and
# projector-phone.png, and reads back the SVG chart of `clicker-tally export`.
# Prints "N passed, M failed". The screenshots go to a temporary directory; to refresh the pictures
# of docs/GUIDE.md "The projector page": SCREENSHOTS=docs/images Tests/browser/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
need() { echo "$1 (scripts/setup.sh --test)"; echo "projector-browser: 0 passed, 1 failed"; exit 1; }
[ -x /usr/bin/chromium ] || need "chromium is missing: apt-get install chromium"
[ -x /usr/bin/chromedriver ] || need "chromedriver is missing: apt-get install chromium-driver"
command -v dbus-daemon >/dev/null && command -v dbus-send >/dev/null || need "dbus-daemon or dbus-send is missing"
python3 -c "import selenium" 2>/dev/null || need "selenium is missing for $(command -v python3): pip install selenium"
for p in clicker-tally clicker-vote; do
  swift build --product $p >/dev/null 2>&1 || { echo "build failed: $p"; echo "projector-browser: 0 passed, 1 failed"; exit 1; }
done
BIN=$(swift build --show-bin-path)
W=$(mktemp -d)
CODE=4821-K7QXM-3PF9A
BUSPID=; DPID=
cleanup() {
  [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
  [ -n "$BUSPID" ] && kill "$BUSPID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$W XDG_STATE_HOME=$W/state HOME=$W
Tests/Harness/private-bus.sh "$W" > "$W/bus.addr" 2>"$W/bus.log" &
BUSPID=$!
for _ in $(seq 100); do [ -S "$W/bus" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$W/bus
cat > "$W/lecture.yaml" <<'YAML'
questions:
  - title: Which planet is the largest?
    kind: single
    options: [Mercury, Venus, Jupiter, Mars]
YAML
"$BIN/clicker-tally" daemon --radio sim --air "$W/air.sock" --join-code "$CODE" --no-gatt-confirm \
  --questions "$W/lecture.yaml" --web 127.0.0.1:0 --bus system > "$W/daemon.log" 2>&1 &
DPID=$!
URL=
for _ in $(seq 300); do
  URL=$(grep -oE 'projector page: http://[^ ]+' "$W/daemon.log" | head -1 | sed 's/projector page: //')
  [ -n "$URL" ] && "$BIN/clicker-tally" status >/dev/null 2>&1 && break
  kill -0 "$DPID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "FAIL: the daemon did not announce its projector page"; tail -20 "$W/daemon.log"
  echo "projector-browser: 0 passed, 1 failed"; exit 1
fi
echo "page: $URL"
SHOTS=${SCREENSHOTS:-$W/images}
mkdir -p "$SHOTS"
python3 Tests/browser/projector_test.py "$BIN" "$W" "$CODE" "$URL" "$SHOTS"
rc=$?
[ $rc -ne 0 ] && { echo "--- daemon log"; tail -20 "$W/daemon.log"; }
exit $rc
