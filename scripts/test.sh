#!/usr/bin/env bash
# The one test command (README "Tests", and what CI runs).
# Installs what the tests need, then runs every tier:
#   1. unit + property tests (pure core, simulated radio)     swift test
#   2. D-Bus integration against a private dbus-daemon + python-dbusmock (inside swift test),
#      leak check, D-Bus policy, systemd unit score, short fuzz pass, crash-safety check
#   3. real BlueZ end to end in a QEMU guest with virtual LE controllers
# Each stage prints its own result; the last line counts the stages.
# Environment: SKIP_E2E=1 skips tier 3 (for quick local runs only; CI never sets it).
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test || { echo "setup failed"; exit 1; }

passed=0; failed=0; failures=()
stage() {  # NAME COMMAND...
  local name=$1; shift
  local t0=$SECONDS
  echo "=== stage: $name"
  if "$@"; then passed=$((passed+1)); echo "=== stage $name: PASS ($((SECONDS-t0)) s)"
  else failed=$((failed+1)); failures+=("$name"); echo "=== stage $name: FAIL ($((SECONDS-t0)) s)"; fi
}

stage build swift build --build-tests
stage swift-test swift test --skip-build
if [ "${SKIP_E2E:-0}" != 1 ]; then
  [ -x Tests/e2e/run.sh ] && stage e2e-bluez Tests/e2e/run.sh
fi

[ ${#failures[@]} -eq 0 ] || echo "failed stages: ${failures[*]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
