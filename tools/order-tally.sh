#!/usr/bin/env bash
# Writes Linker/clicker-tally.order: the functions of the tally's release binary that run, most
# executed first, for lld to put together at the start of the code (Package.swift, tallyLayout;
# docs/PERFORMANCE-daemon.md, "Code layout"). Run it after changes that move the daemon's work to other
# functions, then commit the file; a stale file only costs memory, never correctness (lld ignores
# names it does not find).
#
# 1. scripts/release-build.sh builds the tally, with a link map.
# 2. A copy without debug information (valgrind cannot read the Swift debug information) runs under
#    callgrind: the daemon counting 1,000 loadgen voters on a private bus, exactly as
#    `tools/measure-daemon.sh --rss` measures it (that script runs it, RSS_REPEATS=1), then a
#    simulated poll with a database (`--simulate 50 --duration 4 --json --db`).
# 3. The functions callgrind saw in the binary, by their own instruction count, go to the file, except
#    a name that is also the name of a local function inside a large section that nothing else in the
#    list needs (the compiler's `objectdestroyTm` helpers, say, of which one sits in the 490 kB
#    section of the prebuilt regex parser): lld orders every section that defines a listed name, so
#    such a name would drag that whole section into the ordered code.
#
#   tools/order-tally.sh            (about 2 minutes after a release build; needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is missing (apt-get install valgrind)"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
scripts/release-build.sh --product clicker-tally -Xlinker -Map="$W/tally.map" >/dev/null
BIN=$(scripts/release-build.sh --show-bin-path)/clicker-tally
objcopy --strip-debug "$BIN" "$W/clicker-tally"
CG=(valgrind --tool=callgrind --demangle=no)
echo "profiling the daemon (callgrind, 1,000 voters and 1)"
TALLY_BIN=$W/clicker-tally RSS_REPEATS=1 STALL=60 DAEMON_PREFIX="${CG[*]} --callgrind-out-file=$W/callgrind.daemon.%p" \
  tools/measure-daemon.sh --rss | sed 's/^/  /'
echo "profiling a simulated poll"
XDG_STATE_HOME=$W/state "${CG[@]}" --callgrind-out-file="$W/callgrind.simulate" \
  "$W/clicker-tally" --simulate 50 --duration 4 --json --db "$W/poll.sqlite" > /dev/null 2> "$W/simulate.err" \
  || { cat "$W/simulate.err"; exit 1; }
python3 - "$W/tally.map" Linker/clicker-tally.order "$W"/callgrind.* <<'EOF'
import collections, re, sys

map_path, out_path, profiles = sys.argv[1], sys.argv[2], sys.argv[3:]

# Instructions executed per function of the binary (callgrind's "fn" blocks under the binary's "ob").
cost = collections.Counter()
for path in profiles:
    objects, functions, ob, fn, after_call = {}, {}, None, None, False
    for line in open(path, errors="replace"):
        if line.startswith("calls="):               # the next cost line is the call's, not fn's own
            after_call = True
            continue
        m = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            called, kind, index, name = m.groups()
            table = objects if kind == "ob" else functions
            if name is not None:
                table[index] = name
            if not called:
                if kind == "ob":
                    ob = objects.get(index)
                else:
                    fn = functions.get(index) if ob and ob.endswith("/clicker-tally") else None
                    if fn is not None:
                        cost[fn] += 0
            continue
        if line[:1] in "0123456789+-*" and after_call:
            after_call = False
            continue
        if fn is not None and line[:1] in "0123456789+-*":
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                cost[fn] += int(fields[1])
names, seen = [], set()
for name, _ in cost.most_common():
    name = re.sub(r"'\d+$", "", name)          # callgrind marks recursion depth as name'2
    if name.startswith("0x") or name in seen:   # 0x...: no symbol (an assembler-local function)
        continue
    seen.add(name)
    names.append(name)

# Which input sections of .text define each name, from the link map.
sections_of, size_of, section = collections.defaultdict(set), {}, None
for line in open(map_path):
    fields = line.split(None, 4)
    if len(fields) < 5:
        continue
    text = fields[4].strip()
    if ":(" in text:
        section = text if ":(.text" in text else None
        if section:
            size_of[section] = int(fields[2], 16)
    elif section:
        sections_of[text].add(section)
needed = set()
for n in names:
    if len(sections_of[n]) == 1:
        needed |= sections_of[n]
dragged = {s for n in names if len(sections_of[n]) > 1 for s in sections_of[n]
           if s not in needed and size_of[s] > 4096}
kept = [n for n in names if not sections_of[n] & dragged]
with open(out_path, "w") as f:
    f.write("# The tally's functions that run, most executed first: written by tools/order-tally.sh, read by lld\n")
    f.write("# (Package.swift, tallyLayout). Do not edit; run the script again.\n")
    f.write("\n".join(kept) + "\n")
print(f"{out_path}: {len(kept)} functions ({len(names) - len(kept)} left out: their names would drag in "
      f"{sum(size_of[s] for s in dragged) / 1e6:.2f} MB of sections that do not run)")
EOF
