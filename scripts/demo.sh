#!/usr/bin/env bash
# The main job: the instructor's tally in this terminal. Installs what it needs, builds, then runs
# clicker-tally on BlueZ when this machine has a Bluetooth adapter and bluetoothd, or else on the
# simulated radio with a room of 300 simulated students. Extra arguments go to clicker-tally,
# e.g. `scripts/demo.sh --simulate 100` or `scripts/demo.sh --adapter hci1`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --product clicker-tally
BIN=$(swift build --show-bin-path)/clicker-tally

has_adapter() {
  ls /sys/class/bluetooth/hci* >/dev/null 2>&1 || return 1
  # bluetoothd must be on the system bus for the BlueZ backend
  command -v dbus-send >/dev/null && dbus-send --system --print-reply --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.GetNameOwner string:org.bluez >/dev/null 2>&1
}

if [ $# -eq 0 ] && has_adapter; then
  exec "$BIN"
elif [ $# -eq 0 ]; then
  # A store of its own in a temporary directory, so that e (export) works and no real poll is touched.
  DEMO=$(mktemp -d "${TMPDIR:-/tmp}/clicker-demo.XXXXXX")
  echo "No Bluetooth adapter with bluetoothd here: simulating a room of 300 students on the simulated radio." >&2
  echo "Keys: o open, c close, n next, h hide votes, e export, q quit." >&2
  echo "Database, exports and log lines go to $DEMO" >&2
  sleep 2
  exec "$BIN" --simulate 300 --db "$DEMO/clicker.sqlite" --export-directory "$DEMO"
else
  exec "$BIN" "$@"
fi
