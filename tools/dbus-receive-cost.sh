#!/usr/bin/env bash
# Measures the CPU cost of receiving BlueZ-shaped PropertiesChanged signals through the DBus
# binding's batched fast path, in a release build. The receiver is stopped (SIGSTOP) while the sender
# queues N signals in a private dbus-daemon, then resumed, so it drains them at full speed: the
# figure is the dispatch thread's CPU time (read + libdbus parse/validate + routing + decode +
# batching) divided by N, plus the consumer's per-signal CPU; "fast pending" is "fast" with a call
# awaiting its reply throughout, whose deadline the dispatch thread then looks at on every wake-up.
# Usage: tools/dbus-receive-cost.sh [N=100000] [runs=3]
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100000}"
RUNS="${2:-3}"
WORK="$(mktemp -d -t dbus-receive-cost.XXXXXX)"
DAEMON=""
RECV=""
cleanup() {
    [ -n "$RECV" ] && kill "$RECV" 2>/dev/null || true
    [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null || true
}
trap cleanup EXIT

SWIFTC="$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)"
# DBus imports OSThreads: built first, as a module of its own.
"$SWIFTC" -O -swift-version 6 -parse-as-library -module-name OSThreads -package-name clicker \
    -emit-module -emit-module-path "$WORK/OSThreads.swiftmodule" -emit-library -static \
    Sources/OSThreads/*.swift -o "$WORK/libOSThreads.a"
"$SWIFTC" -O -swift-version 6 -module-name exp -package-name clicker -I Sources/CDBus -I "$WORK" -L "$WORK" \
    $(pkg-config --cflags dbus-1 | sed 's/-I/-Xcc -I/g') \
    Sources/DBus/*.swift Tests/DBusTests/AdvReportDecoder.swift tools/dbus-receive-cost/main.swift \
    -lOSThreads -ldbus-1 -o "$WORK/exp"

cc -O2 tools/dbus-receive-cost/libdbus-floor.c $(pkg-config --cflags --libs dbus-1) -o "$WORK/floor"

Tests/Harness/private-bus.sh "$WORK" > "$WORK/bus.addr" 2>/dev/null &
DAEMON=$!
for _ in $(seq 100); do [ -S "$WORK/bus" ] && break; sleep 0.05; done
ADDR="unix:path=$WORK/bus"

echo "libdbus floor: $("$WORK/floor" 100000 | tail -1)"
"$WORK/exp" "$ADDR" 200000 micro
for mode in fast null "fast pending"; do
    for _ in $(seq "$RUNS"); do
        # shellcheck disable=SC2086 # "fast pending" is two arguments
        "$WORK/exp" "$ADDR" "$N" recv $mode >"$WORK/recv.out" 2>&1 &
        RECV=$!
        for _ in $(seq 300); do grep -q READY "$WORK/recv.out" 2>/dev/null && break; sleep 0.1; done
        kill -STOP "$RECV"
        "$WORK/exp" "$ADDR" "$N" send
        kill -CONT "$RECV"
        wait "$RECV"
        RECV=""
        echo "$mode: $(grep n= "$WORK/recv.out")"
    done
done
