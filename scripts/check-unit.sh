#!/bin/sh
# Checks systemd/clicker-tally.service, alone, with the projector page's drop-in
# (systemd/clicker-tally-web.conf) and with the question set's (systemd/clicker-tally-questions.conf): `systemd-analyze verify` must pass and
# `systemd-analyze security --offline=true` must report an exposure of at most $MAX_EXPOSURE (default 2.0).
# The unit must also cap its memory with a MemoryMax= of a size and its file descriptors with a LimitNOFILE=,
# which no drop-in may change.
# Exits non-zero (loudly) otherwise, or when systemd-analyze is missing.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
unit="$here/systemd/clicker-tally.service"
max="${MAX_EXPOSURE:-2.0}"

command -v systemd-analyze >/dev/null 2>&1 || { echo "FAIL: systemd-analyze not found (apt-get install systemd)" >&2; exit 2; }
[ -f "$unit" ] || { echo "FAIL: $unit missing" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# verify checks that ExecStart= exists; point a copy at a stub so the unit can be checked before installing.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nexit 0\n' > "$tmp/bin/clicker-tally"
chmod 0755 "$tmp/bin/clicker-tally"
grep -q '^ExecStart=/usr/local/bin/clicker-tally daemon --resume-open$' "$unit" || { echo "FAIL: unexpected ExecStart= line" >&2; exit 1; }
# A memory cap: exactly one MemoryMax= line, a size (digits and an optional K/M/G/T suffix), not infinity.
[ "$(grep -c '^MemoryMax=' "$unit")" = 1 ] && grep -Eq '^MemoryMax=[1-9][0-9]*[KMGT]?$' "$unit" \
    || { echo "FAIL: the unit must set MemoryMax= to a size" >&2; exit 1; }
for d in "$here"/systemd/clicker-tally-*.conf; do
    if grep -q '^MemoryMax=' "$d"; then echo "FAIL: $d changes MemoryMax=" >&2; exit 1; fi
done
echo "ok: $(grep '^MemoryMax=' "$unit")"
# A file descriptor limit: exactly one LimitNOFILE= line, a number, which no drop-in may change (the page
# server caps its connections below it, ProjectorWeb.ConnectionLimits).
[ "$(grep -c '^LimitNOFILE=' "$unit")" = 1 ] && grep -Eq '^LimitNOFILE=[1-9][0-9]*$' "$unit" \
    || { echo "FAIL: the unit must set LimitNOFILE= to a number" >&2; exit 1; }
for d in "$here"/systemd/clicker-tally-*.conf; do
    if grep -q '^LimitNOFILE=' "$d"; then echo "FAIL: $d changes LimitNOFILE=" >&2; exit 1; fi
done
echo "ok: $(grep '^LimitNOFILE=' "$unit")"
sed "s|^ExecStart=/usr/local/bin/clicker-tally |ExecStart=$tmp/bin/clicker-tally |" "$unit" > "$tmp/clicker-tally.service"
# The unit with a drop-in (merge NAME): its [Service] lines go at the end of the unit's [Service] section,
# where a drop-in's would take effect (ExecStart= empties the list, later single settings win, lists merge).
merge() {
    dropin="$here/systemd/clicker-tally-$1.conf"
    [ -f "$dropin" ] || { echo "FAIL: $dropin missing" >&2; exit 2; }
    mkdir -p "$tmp/$1"
    sed -n '/^\[Service\]/,$p' "$dropin" | sed '1d' | sed "s|^ExecStart=/usr/local/bin/clicker-tally |ExecStart=$tmp/bin/clicker-tally |" > "$tmp/$1.dropin"
    awk -v f="$tmp/$1.dropin" '/^\[Install\]/ { while ((getline l < f) > 0) print l; print "" } { print }' \
        "$tmp/clicker-tally.service" > "$tmp/$1/clicker-tally.service"
}
merge web
merge questions

# check NAME FILE: verify, then the exposure score.
check() {
    echo "== $1: systemd-analyze verify"
    if ! out=$(systemd-analyze verify --man=no "$2" 2>&1); then
        echo "$out" >&2
        echo "FAIL: systemd-analyze verify failed" >&2
        exit 1
    fi
    if [ -n "$out" ]; then
        echo "$out" >&2
        echo "FAIL: systemd-analyze verify printed warnings" >&2
        exit 1
    fi
    echo "ok"

    echo "== $1: systemd-analyze security --offline=true"
    report=$(systemd-analyze security --offline=true --no-pager "$2" 2>&1) || true
    echo "$report" | grep -v '^✓' || true
    score=$(echo "$report" | sed -n 's/.*Overall exposure level for clicker-tally.service: \([0-9.]*\).*/\1/p')
    [ -n "$score" ] || { echo "FAIL: no exposure score in the report" >&2; exit 1; }
    if awk -v s="$score" -v m="$max" 'BEGIN { exit !(s + 0 <= m + 0) }'; then
        echo "PASS: $1: exposure $score <= $max"
    else
        echo "FAIL: $1: exposure $score > $max" >&2
        exit 1
    fi
}

check "the unit" "$tmp/clicker-tally.service"
check "with the web drop-in" "$tmp/web/clicker-tally.service"
check "with the question-set drop-in" "$tmp/questions/clicker-tally.service"
