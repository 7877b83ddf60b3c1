#!/usr/bin/env bash
# Leak check for the DBus binding: runs DBusTests.LeakScenarioTests under valgrind memcheck.
# Fails (non-zero exit) on any memory error or definitely-lost block, and if the scenario's own
# checks (all connections and dispatch threads released) fail.
# Needs: valgrind, dbus-daemon, binutils (Debian packages 'valgrind', 'dbus-daemon', 'binutils').
set -euo pipefail
cd "$(dirname "$0")/../.."

for tool in valgrind dbus-daemon objcopy; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "leakcheck-dbus: $tool not found (apt-get install valgrind dbus-daemon binutils)" >&2
        exit 2
    fi
done

swift build --build-tests >&2
BIN="$(swift build --show-bin-path)/clickerPackageTests.xctest"
WORK="$(mktemp -d -t leakcheck-dbus.XXXXXX)"
LOG="$WORK/valgrind.log"
DAEMON_PID=""
cleanup() {
    if [ -n "$DAEMON_PID" ]; then kill "$DAEMON_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

# Valgrind 3.19 cannot read the DWARF 5 that Swift emits: run a copy without debug info (symbols stay).
objcopy --strip-debug "$BIN" "$WORK/tests.xctest"

# Valgrind cannot spawn children through Foundation's Process, so the private bus runs outside it.
Tests/Harness/private-bus.sh "$WORK" > "$WORK/bus.addr" 2>"$WORK/daemon.log" &
DAEMON_PID=$!
for _ in $(seq 100); do [ -S "$WORK/bus" ] && break; sleep 0.05; done

set +e
DBUS_LEAKCHECK_BUS_ADDRESS="unix:path=$WORK/bus" \
valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
    --error-exitcode=99 --num-callers=40 \
    --suppressions="$PWD/Tests/leaks/valgrind-swift.supp" \
    "$WORK/tests.xctest" DBusTests.LeakScenarioTests >"$LOG" 2>&1
rc=$?
set -e

grep -E "ERROR SUMMARY|definitely lost:|indirectly lost:|Executed|error:" "$LOG" | sed 's/^==[0-9]*== //' | sort -u || true
if [ $rc -ne 0 ]; then
    echo "leakcheck-dbus: FAILED (exit $rc), full log: $LOG" >&2
    exit 1
fi
echo "leakcheck-dbus: OK (log: $LOG)"
