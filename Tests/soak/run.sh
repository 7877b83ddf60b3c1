#!/usr/bin/env bash
# Soak benchmark: the tally daemon and the voter through a three-hour lecture, time accelerated
# (docs/PERFORMANCE.md, docs/PERFORMANCE-daemon.md "Soak"). Separate from the tests.
#
#   Tests/soak/run.sh            300 voters, 40 questions, 180 lecture minutes at x30 (about 15 minutes):
#                              the simulated air, then D-Bus against bluez-loadgen, then clicker-vote
#   Tests/soak/run.sh --short    the same at x60 over 90 lecture minutes, 18 questions, growth checked over the
#                              last 40 (CI, about 5 minutes)
#   Tests/soak/run.sh --only dbus [--only sim|voter]   some scenarios
#   CONFIG=release|debug OUT=DIR Tests/soak/run.sh ...
#
# The full run measures the installed build (release, static Swift runtime, as scripts/install.sh
# builds it); --short uses the debug build the test stages already built (CONFIG=release to change
# that), and then checks every target but the absolute RSS. Writes soak-*.csv and soak-*.png to OUT
# (default: a temporary directory, printed), prints the figures and one line per check, and ends
# with "soak: N passed, M failed"; exits non-zero when a check failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
SHORT=0
for a in "$@"; do [ "$a" = --short ] && SHORT=1; done
fail() { echo "soak: $1"; echo "soak: 0 passed, 1 failed"; exit 1; }
for tool in dbus-daemon gcc pkg-config python3; do
  command -v $tool >/dev/null || fail "$tool is missing (scripts/setup.sh --test)"
done
if ! command -v gnuplot >/dev/null; then
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "installing gnuplot (Debian gnuplot-nox) for the plots"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends gnuplot-nox; } \
    >/dev/null 2>&1 || echo "gnuplot could not be installed: no plots (the checks still run)"
fi
if [ "$SHORT" = 1 ]; then CONFIG=${CONFIG:-debug}; else CONFIG=${CONFIG:-release}; fi
if [ "$CONFIG" = release ]; then BUILD=(scripts/release-build.sh)   # as scripts/install.sh
else BUILD=(swift build); fi
for p in clicker-tally clicker-vote; do
  "${BUILD[@]}" --product $p >/dev/null 2>&1 || fail "build failed: ${BUILD[*]} --product $p"
done
BIN=$("${BUILD[@]}" --show-bin-path)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
OUT=${OUT:-$(mktemp -d /tmp/soak.XXXXXX)}
# Private copies, so a rebuild during the run cannot disturb it.
cp "$BIN/clicker-tally" "$BIN/clicker-vote" "$W/"
gcc -O2 -o "$W/bluez-loadgen" Benchmarks/Benchmarks/BlueZLoadGen/*.c $(pkg-config --cflags --libs dbus-1) \
  || fail "cannot build bluez-loadgen"
python3 Tests/soak/soak.py --tally "$W/clicker-tally" --vote "$W/clicker-vote" --loadgen "$W/bluez-loadgen" \
  --config "$CONFIG" --work "$W" --out "$OUT" "$@"
