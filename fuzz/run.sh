#!/usr/bin/env bash
# Builds the libFuzzer targets with `swiftc -sanitize=fuzzer,address -parse-as-library` against the
# ClickerWire sources (and swift-crypto from a release `swift build`), seeds each corpus from the
# test vectors in docs/PROTOCOL.md, and runs them.
#
#   fuzz/run.sh                    10,000,000 executions per target (the release gate)
#   fuzz/run.sh --short            30 seconds per target (CI)
#   fuzz/run.sh --runs N [target…]  N executions of the named targets
#   fuzz/run.sh --seconds S [target…]
#
# Targets: advertisement, gatt, manufacturer-data. Exit status is non-zero on any crash; crash
# inputs land in fuzz/artifacts/. Needs: swift toolchain (libFuzzer ships with it), python3.
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
        advertisement|gatt|manufacturer-data) targets+=("$1") ;;
        *) echo "usage: $0 [--short | --runs N | --seconds S] [advertisement|gatt|manufacturer-data…]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#targets[@]} -eq 0 ] && targets=(advertisement gatt manufacturer-data)

echo "== building swift-crypto and _CryptoExtras (release)"
swift build -c release --target _CryptoExtras >/dev/null
BIN=$(swift build -c release --show-bin-path)
MODS=$BIN/Modules
[ -d "$MODS" ] || MODS=$BIN
mapfile -t OBJS < <(find "$BIN"/CCryptoBoringSSL.build "$BIN"/CCryptoBoringSSLShims.build "$BIN"/CryptoBoringWrapper.build \
    "$BIN"/Crypto.build "$BIN"/_CryptoExtras.build "$BIN"/SwiftASN1.build -name '*.o' | sort)
CRYPTO_SRC=$(swift package show-dependencies --format json | python3 -c '
import json,sys
def walk(d):
    for x in d["dependencies"]:
        if x["identity"] == "swift-crypto": print(x["path"]); return True
        if walk(x): return True
walk(json.load(sys.stdin))')
# The C modules' module maps live in their include directories.
CFLAGS=(-Xcc -I"$CRYPTO_SRC"/Sources/CCryptoBoringSSL/include -Xcc -I"$CRYPTO_SRC"/Sources/CCryptoBoringSSLShims/include)
SAN=(-sanitize=fuzzer,address -parse-as-library -O)
mkdir -p "$OUT/mod" "$ROOT/fuzz/artifacts"


echo "== building ClickerTransport"
swiftc "${SAN[@]}" -module-name ClickerTransport -emit-module -emit-module-path "$OUT/mod/ClickerTransport.swiftmodule" \
    -emit-library -static -o "$OUT/libClickerTransport.a" Sources/ClickerTransport/*.swift > "$OUT/build-transport.log" 2>&1 \
    || { cat "$OUT/build-transport.log" >&2; exit 1; }

echo "== writing seed corpora from docs/PROTOCOL.md"
python3 fuzz/seeds.py docs/PROTOCOL.md "$OUT/seeds"

status=0
for t in "${targets[@]}"; do
    case "$t" in
        advertisement) src=fuzz/FuzzAdvertisement.swift ;;
        gatt) src=fuzz/FuzzGATT.swift ;;
        manufacturer-data) src=fuzz/FuzzManufacturerData.swift ;;
    esac
    echo "== building fuzz-$t"
    # (The linker's "Cannot export local symbol '__asan_…'" warnings are harmless; kept in the log.)
    if ! swiftc "${SAN[@]}" -module-name "Fuzz_${t//-/_}" -I "$OUT/mod" -I "$MODS" "${CFLAGS[@]}" \
        Sources/ClickerWire/*.swift "$src" "$OUT/libClickerTransport.a" "${OBJS[@]}" -lstdc++ -o "$OUT/fuzz-$t" \
        > "$OUT/build-$t.log" 2>&1; then
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
