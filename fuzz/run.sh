#!/usr/bin/env bash
# Builds the libFuzzer targets with `swiftc -sanitize=fuzzer,address -parse-as-library`, seeds each
# corpus from the test vectors in docs/PROTOCOL-VECTORS.md, and runs them:
#   advertisement  BallotCodec.openAdvertisement (ClickerWire sources, swift-crypto from a release build)
#   gatt           BallotCodec.openGATT
#   radio-input    the radios' decoders: HCI's AdvertisementExtractor.extract (reassembling) on event packets, and
#                  BlueZ's SignalDecoder.decode on D-Bus messages our wire reader parses (BlueZ
#                  sources, instrumented DBus and HCI modules, libdbus-1, libbluetooth)
#   dbus-wire      the D-Bus wire-format reader (DBusWireMessage, DBusWireCursor) against libdbus's
#                  dbus_message_demarshal on the same bytes (instrumented DBus module, libdbus-1)
#   text           the join code, answer, enrollment code and device key parsers
#   beacon         BeaconCodec.open (the voter's decoder of the tally's beacon frames) and the text
#                  assembler
#
#   fuzz/run.sh                    10,000,000 executions per target (the release gate)
#   fuzz/run.sh --short            30 seconds per target (CI)
#   fuzz/run.sh --runs N [target…]  N executions of the named targets
#   fuzz/run.sh --seconds S [target…]
#
# Targets: advertisement, gatt, radio-input, text, beacon, dbus-wire. Exit status is non-zero on any crash; crash
# inputs land in fuzz/artifacts/. Needs: swift toolchain (libFuzzer ships with it), python3,
# libdbus-1-dev and libbluetooth-dev (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/.build-fuzz
mode=(-runs=10000000)
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --short) mode=(-max_total_time=30) ;;
        --runs) mode=(-runs="$2"); shift ;;
        --seconds) mode=(-max_total_time="$2"); shift ;;
        advertisement|gatt|radio-input|text|beacon|dbus-wire) targets+=("$1") ;;
        *) echo "usage: $0 [--short | --runs N | --seconds S] [advertisement|gatt|radio-input|text|beacon|dbus-wire…]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#targets[@]} -eq 0 ] && targets=(advertisement gatt radio-input text beacon dbus-wire)

echo "== building swift-crypto, _CryptoExtras and swift-log (release)"
swift build -c release --target _CryptoExtras >/dev/null
swift build -c release --target Logging >/dev/null
BIN=$(swift build -c release --show-bin-path)
MODS=$BIN/Modules
[ -d "$MODS" ] || MODS=$BIN
# swift-crypto 4: SHA-3 comes from XKCP, and `_CryptoExtras` re-exports `CryptoExtras`.
mapfile -t OBJS < <(find "$BIN"/CCryptoBoringSSL.build "$BIN"/CCryptoBoringSSLShims.build "$BIN"/CryptoBoringWrapper.build \
    "$BIN"/CXKCP.build "$BIN"/CXKCPShims.build "$BIN"/Crypto.build "$BIN"/CryptoExtras.build "$BIN"/_CryptoExtras.build \
    "$BIN"/SwiftASN1.build -name '*.o' 2>/dev/null | sort)
mapfile -t LOG_OBJS < <(find "$BIN"/Logging.build -name '*.o' | sort)
CRYPTO_SRC=$(swift package show-dependencies --format json | python3 -c '
import json,sys
def walk(d):
    for x in d["dependencies"]:
        if x["identity"] == "swift-crypto": print(x["path"]); return True
        if walk(x): return True
walk(json.load(sys.stdin))')
# The C modules' module maps live in their include directories.
CFLAGS=(-Xcc -I"$CRYPTO_SRC"/Sources/CCryptoBoringSSL/include -Xcc -I"$CRYPTO_SRC"/Sources/CCryptoBoringSSLShims/include)
# -package-name: the sources use `package` access (test hooks), as SwiftPM builds them.
SAN=(-sanitize=fuzzer,address -parse-as-library -O -package-name clicker)
# The system libraries' module maps (Sources/C*) and headers, for the radio-input target.
CFLAGS+=(-I Sources/CDBus -I Sources/CBluetooth)
for f in $(pkg-config --cflags dbus-1 bluez); do CFLAGS+=(-Xcc "$f"); done
mkdir -p "$OUT/mod" "$ROOT/fuzz/artifacts"

# module NAME [swiftc flags…] sources…: an instrumented static library and its module.
module() {
    local name=$1; shift
    echo "== building $name"
    swiftc "${SAN[@]}" -module-name "$name" -emit-module -emit-module-path "$OUT/mod/$name.swiftmodule" \
        -I "$OUT/mod" -I "$MODS" "${CFLAGS[@]}" -emit-library -static -o "$OUT/lib$name.a" "$@" > "$OUT/build-$name.log" 2>&1 \
        || { cat "$OUT/build-$name.log" >&2; exit 1; }
}
module ClickerTransport Sources/ClickerTransport/*.swift
needs_radio=0
needs_dbus=0
for t in "${targets[@]}"; do
    [ "$t" = radio-input ] && needs_radio=1 && needs_dbus=1
    [ "$t" = dbus-wire ] && needs_dbus=1
done
if [ $needs_dbus = 1 ]; then
    # -enable-testing: the dbus-wire harness builds a DBusMessage from demarshalled bytes (an internal initialiser).
    module OSThreads Sources/OSThreads/*.swift
    module DBus -enable-testing Sources/DBus/*.swift
fi
if [ $needs_radio = 1 ]; then
    module ClickerDoctor Sources/ClickerDoctor/*.swift
    module HCI Sources/HCI/*.swift
fi

echo "== writing seed corpora from docs/PROTOCOL-VECTORS.md"
python3 fuzz/seeds.py docs/PROTOCOL-VECTORS.md "$OUT/seeds"

status=0
for t in "${targets[@]}"; do
    wire=(Sources/ClickerWire/*.swift "$OUT/libClickerTransport.a" "${OBJS[@]}" -lstdc++)
    case "$t" in
        advertisement) inputs=("${wire[@]}" fuzz/FuzzAdvertisement.swift) ;;
        gatt) inputs=("${wire[@]}" fuzz/FuzzGATT.swift) ;;
        text) inputs=("${wire[@]}" fuzz/FuzzText.swift) ;;
        beacon) inputs=("${wire[@]}" fuzz/FuzzBeacon.swift) ;;
        radio-input) inputs=(Sources/BlueZ/*.swift fuzz/FuzzRadioInput.swift "$OUT/libDBus.a" "$OUT/libHCI.a" "$OUT/libClickerDoctor.a" "$OUT/libOSThreads.a"
                             "$OUT/libClickerTransport.a" "${LOG_OBJS[@]}" -ldbus-1 -lbluetooth) ;;
        dbus-wire) inputs=(fuzz/FuzzDBusWire.swift "$OUT/libDBus.a" "$OUT/libOSThreads.a" -ldbus-1) ;;
    esac
    echo "== building fuzz-$t"
    # (The linker's "Cannot export local symbol '__asan_…'" warnings are harmless; kept in the log.)
    if ! swiftc "${SAN[@]}" -module-name "Fuzz_${t//-/_}" -I "$OUT/mod" -I "$MODS" "${CFLAGS[@]}" \
        "${inputs[@]}" -o "$OUT/fuzz-$t" > "$OUT/build-$t.log" 2>&1; then
        grep -v "Cannot export local symbol" "$OUT/build-$t.log" >&2
        exit 1
    fi
    mkdir -p "$OUT/corpus-$t"
    echo "== running fuzz-$t ${mode[*]}"
    if ! "$OUT/fuzz-$t" "${mode[@]}" -artifact_prefix="$ROOT/fuzz/artifacts/$t-" -print_final_stats=1 \
        "$OUT/corpus-$t" "$OUT/seeds/$t" 2> "$OUT/fuzz-$t.log"; then
        status=1
        echo "!! fuzz-$t crashed; see $OUT/fuzz-$t.log and fuzz/artifacts/" >&2
    fi
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs|ERROR" "$OUT/fuzz-$t.log" || true
done
exit $status
