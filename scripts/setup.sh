#!/usr/bin/env bash
# Installs the system packages the project needs on Debian 12 (run as root, or with sudo available).
# Idempotent: installs only what is missing. Swift 6.1+ must already be on PATH.
#   scripts/setup.sh            # build + run needs
#   scripts/setup.sh --test     # also what the test tiers need
set -euo pipefail

pkgs=(libdbus-1-dev libbluetooth-dev libpq-dev pkg-config)
if [ "${1:-}" = "--test" ]; then
  pkgs+=(dbus-daemon dbus-bin python3-dbus python3-dbusmock tmux valgrind util-linux passwd
         python3-gi binutils systemd qemu-system-x86 debootstrap cpio libdbus-1-3 sqlite3
         chromium chromium-driver gdb procps postgresql iproute2)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The instant-runoff comparison test counts 10,000 elections again with pyrankvote, an independent
# implementation, under the python3 on PATH.
if [ "${1:-}" = "--test" ] && ! python3 -c "import pyrankvote" 2>/dev/null; then
  echo "setup: installing pyrankvote 2.0.6 for python3 ($(command -v python3))"
  python3 -m pip install -q pyrankvote==2.0.6
fi

# The projector's browser test drives Debian's chromium through Debian's chromedriver with selenium
# (Tests/browser/run.sh hands it /usr/bin/chromedriver, so selenium never downloads a browser).
if [ "${1:-}" = "--test" ] && ! python3 -c "import selenium" 2>/dev/null; then
  echo "setup: installing selenium 4 for python3 ($(command -v python3))"
  python3 -m pip install -q "selenium>=4.11,<5"
fi

# scripts/install.sh runs this as root and builds as the invoking user: Swift is on that user's PATH.
[ -n "${SETUP_SKIP_SWIFT:-}" ] || command -v swift >/dev/null || { echo "setup: Swift 6.1 or newer must be on PATH (https://www.swift.org/install/linux/)" >&2; exit 1; }
