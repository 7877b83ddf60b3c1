#!/usr/bin/env bash
# Installs clicker-tally and clicker-vote, the systemd unit, its system user and the D-Bus policy.
#   sudo scripts/install.sh                 build (release, static Swift runtime) as you, install as root
#   scripts/install.sh --destdir DIR        stage everything under DIR (packaging, tests)
#   --bin-dir DIR                           install binaries already built in DIR instead of building
#   --no-strip                              keep symbols and debug info in the installed binaries
# The installed binaries are stripped (symbols and DWARF: about 51 MB of the tally's 119 MB). A crash
# backtrace of an installed binary then shows addresses, not names; the unstripped binary of the same
# build (same GNU build ID, `readelf -n`) stays in the build directory and names them:
#   addr2line -f -C -i -e .build/release/clicker-tally 0xADDRESS
# The build never runs as root: under sudo it runs as $SUDO_USER (a login shell, so their PATH finds
# swift), in this checkout, which must belong to that user; root only copies the results.
# Then: sudo systemctl enable --now clicker-tally; add instructors to the 'clicker' group.
set -euo pipefail
cd "$(dirname "$0")/.."
DESTDIR=""; BIN_DIR=""; STRIP=1
while [ $# -gt 0 ]; do
  case $1 in
    --destdir) DESTDIR=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --no-strip) STRIP=0; shift ;;
    *) echo "usage: $0 [--destdir DIR] [--bin-dir DIR] [--no-strip]" >&2; exit 2 ;;
  esac
done
if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
  echo "install: installing into / needs root: run sudo $0 (the build still runs as you)" >&2
  exit 2
fi
if [ -z "$BIN_DIR" ]; then
  if [ "$(id -u)" = 0 ]; then
    if [ -z "${SUDO_USER:-}" ] || [ "$SUDO_USER" = root ]; then
      echo "install: refusing to build as root. Run sudo $0 from your own account (the build runs as" >&2
      echo "         you), or build first (scripts/release-build.sh --product clicker-tally, then" >&2
      echo "         --product clicker-vote) and pass --bin-dir DIR" >&2
      exit 2
    fi
    owner=$(stat -c %U .)
    if [ "$owner" != "$SUDO_USER" ]; then
      echo "install: this checkout belongs to $owner, not $SUDO_USER; build it as its owner and pass --bin-dir" >&2
      exit 2
    fi
    SETUP_SKIP_SWIFT=1 scripts/setup.sh   # system packages: the one step that needs root
    # runuser -l: the user's login shell and environment (HOME, and the PATH that finds swift).
    as_user() { runuser -l "$SUDO_USER" -c "cd $(printf %q "$PWD") &&$(printf ' %q' "$@")"; }
  else
    scripts/setup.sh
    as_user() { "$@"; }
  fi
  # One product at a time: a plain `swift build` would also build the test-support modules, which
  # import XCTest, and XCTest has no static library.
  for p in clicker-tally clicker-vote; do
    as_user scripts/release-build.sh --product "$p" >&2
  done
  BIN_DIR=$(as_user scripts/release-build.sh --show-bin-path)
fi
for b in clicker-tally clicker-vote; do
  install -D -m 0755 "$BIN_DIR/$b" "$DESTDIR/usr/local/bin/$b"
  if [ $STRIP = 1 ]; then strip --strip-all "$DESTDIR/usr/local/bin/$b"; fi
  echo "$b: $(stat -c %s "$DESTDIR/usr/local/bin/$b") bytes installed"
done
install -D -m 0644 systemd/clicker-tally.service "$DESTDIR/etc/systemd/system/clicker-tally.service"
install -D -m 0644 README.md "$DESTDIR/usr/local/share/doc/clicker/README.md"
install -D -m 0644 docs/GUIDE.md "$DESTDIR/usr/local/share/doc/clicker/GUIDE.md"
# The projector page's drop-in, off until copied to /etc/systemd/system/clicker-tally.service.d/web.conf.
install -D -m 0644 systemd/clicker-tally-web.conf "$DESTDIR/usr/local/share/doc/clicker/clicker-tally-web.conf"
install -D -m 0644 systemd/clicker-tally-questions.conf "$DESTDIR/usr/local/share/doc/clicker/clicker-tally-questions.conf"
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
