#!/usr/bin/env bash
# Checks the installed size of both binaries: their release builds, stripped as scripts/install.sh
# strips them, must each be at most 40 MB (docs/PERFORMANCE.md, "Binary size"; MB = 1,000,000 bytes), so that a
# student's board has room for the voter and an instructor's laptop for the tally.
#   scripts/check-size.sh [BIN_DIR]     (default: builds them with scripts/release-build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=40000000
BIN_DIR=${1:-}
if [ -z "$BIN_DIR" ]; then
  for p in clicker-tally clicker-vote; do scripts/release-build.sh --product $p >/dev/null; done
  BIN_DIR=$(scripts/release-build.sh --show-bin-path)
fi
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
passed=0; failed=0
for b in clicker-tally clicker-vote; do
  strip --strip-all -o "$W/$b" "$BIN_DIR/$b"
  size=$(stat -c %s "$W/$b")
  verdict=PASS; [ "$size" -le $LIMIT ] || verdict=FAIL
  awk -v v=$verdict -v b=$b -v s="$size" -v l=$LIMIT 'BEGIN { printf "%s: %s installed (stripped) %.2f MB, limit %.0f MB\n", v, b, s / 1e6, l / 1e6 }'
  if [ $verdict = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "check-size: $passed passed, $failed failed"
[ $failed -eq 0 ]
