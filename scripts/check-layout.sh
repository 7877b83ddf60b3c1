#!/usr/bin/env bash
# Checks the tally's code layout in its release build (Package.swift, tallyLayout;
# docs/PERFORMANCE-daemon.md, "Code layout"): fails unless
#   - most functions Linker/clicker-tally.order lists are in the binary (the list is not stale),
#   - they sit together at the start of the code, in a span at most a third of it (without the
#     ordering they spread over all of it), and
#   - the compiler's private helpers are gathered in their own output section, .text.private.
#   scripts/check-layout.sh [BINARY]     (default: builds it with scripts/release-build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-}
if [ -z "$BIN" ]; then
  scripts/release-build.sh --product clicker-tally >/dev/null
  BIN=$(scripts/release-build.sh --show-bin-path)/clicker-tally
fi
python3 - "$BIN" Linker/clicker-tally.order <<'EOF'
import subprocess, sys
binary, order_path = sys.argv[1], sys.argv[2]
sections = {}
for line in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.replace("[ ", "[").split()
    if len(fields) > 5 and fields[0].startswith("[") and fields[0] != "[Nr]":
        sections[fields[1]] = (int(fields[3], 16), int(fields[5], 16))
text_start, text_size = sections[".text"]
first = {}
for line in subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if len(fields) == 3:
        address = int(fields[0], 16)
        if text_start <= address < text_start + text_size:
            first[fields[2]] = min(address, first.get(fields[2], address))
listed = [l.strip() for l in open(order_path) if l.strip() and not l.startswith("#")]
found = sorted(first[n] for n in listed if n in first)
problems = []
if len(found) < 0.8 * len(listed):
    problems.append(f"only {len(found)} of {len(listed)} listed functions are in the binary: run tools/order-tally.sh")
span = found[int(len(found) * 0.99) - 1] - text_start if found else text_size
if span > text_size / 3:
    problems.append(f"99 % of the listed functions spread over {span / 1e6:.1f} MB of {text_size / 1e6:.1f} MB: not laid out by the "
                    "list (objects compiled without a section per function? the compiler keeps objects built before "
                    "scripts/release-build.sh's flags: remove .build/*/release and build again)")
private = sections.get(".text.private")
if private is None:
    problems.append("no .text.private section: Linker/private-text.ld was not applied")
helpers = f"{private[1] / 1e3:.0f} kB in .text.private" if private else "spread through the code"
print(f"code layout of {binary}: {len(found)} of {len(listed)} listed functions found; 99 % of them in the first "
      f"{span / 1e6:.1f} MB of {text_size / 1e6:.1f} MB of code; private helpers: {helpers}")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
EOF
