#!/usr/bin/env bash
# Installs clicker-tally and clicker-vote, the systemd unit, its system user and the D-Bus policy.
#   sudo scripts/install.sh                 build (release, static Swift runtime) and install
#   scripts/install.sh --destdir DIR        stage everything under DIR (packaging, tests)
#   --bin-dir DIR                           install binaries already built in DIR instead of building
# Then: sudo systemctl enable --now clicker-tally; add instructors to the 'clicker' group.
set -euo pipefail
cd "$(dirname "$0")/.."
DESTDIR=""; BIN_DIR=""
while [ $# -gt 0 ]; do
  case $1 in
    --destdir) DESTDIR=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    *) echo "usage: $0 [--destdir DIR] [--bin-dir DIR]" >&2; exit 2 ;;
  esac
done
if [ -z "$BIN_DIR" ]; then
  scripts/setup.sh
  swift build -c release --static-swift-stdlib
  BIN_DIR=$(swift build -c release --show-bin-path)
fi
install -D -m 0755 "$BIN_DIR/clicker-tally" "$DESTDIR/usr/local/bin/clicker-tally"
install -D -m 0755 "$BIN_DIR/clicker-vote" "$DESTDIR/usr/local/bin/clicker-vote"
install -D -m 0644 systemd/clicker-tally.service "$DESTDIR/etc/systemd/system/clicker-tally.service"
install -D -m 0644 systemd/clicker-tally.sysusers.conf "$DESTDIR/usr/lib/sysusers.d/clicker-tally.conf"
install -D -m 0644 dbus-policy/org.clicker.Tally1.conf "$DESTDIR/usr/share/dbus-1/system.d/org.clicker.Tally1.conf"
if [ -z "$DESTDIR" ]; then
  if command -v systemd-sysusers >/dev/null; then systemd-sysusers clicker-tally.conf; fi
  if [ -d /run/systemd/system ]; then systemctl daemon-reload; systemctl reload dbus 2>/dev/null || true; fi
  echo "installed. Start it: sudo systemctl enable --now clicker-tally"
  echo "Let an instructor control it: sudo usermod -aG clicker <user>; then clicker-tally watch"
else
  echo "staged under $DESTDIR"
fi
