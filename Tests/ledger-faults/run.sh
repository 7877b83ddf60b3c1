#!/usr/bin/env bash
# Receivers counting one poll into one PostgreSQL ledger, as separate processes, under faults
# (docs/LEDGER.md "Receivers"): three `clicker-tally receiver` processes hear 300 voters of a
# simulated hall answering three questions (and changing answers); meanwhile receivers are killed
# with SIGKILL 20 times and started again on the same journal, the database is restarted 5 times
# (stop -m immediate / fast), one receiver is cut off from the database for 30 s (a blackhole route to
# its network namespace), and saved journals are shipped again, twice, at the end. Every receiver
# must end with an empty journal and the ledger must hold each voter's last ballot of each question,
# once. Then a network goes silent under two `ledger watch` connections (silent.py): the default
# liveness settings give up on it within 30 s; without keepalives, nothing does. Prints the sum of both:
# "… N passed, M failed".
#
#   Tests/ledger-faults/run.sh             (SEED=n to choose the schedule; default 41)
#
# Needs Debian's postgresql package and root for the network namespace (through sudo when not
# root; the build stays the invoking user's); uses the debug build.
set -uo pipefail
cd "$(dirname "$0")/../.."
SEED=${SEED:-41}
fail() { echo "ledger-faults: $1"; echo "ledger-faults: 0 passed, 1 failed"; exit 1; }
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || fail "no PostgreSQL server: apt-get install postgresql"
{ command -v ip || [ -x /usr/sbin/ip ]; } >/dev/null || fail "ip (iproute2) is missing"
swift build --product clicker-tally >/dev/null 2>&1 || fail "build failed: swift build --product clicker-tally"
W=$(mktemp -d /tmp/ledger-faults.XXXXXX)
rc=1
# Kept when the run fails (the receivers' logs, journals and the server's log are there).
trap '[ "$rc" -eq 0 ] && $SUDO rm -rf "$W" || echo "ledger-faults: kept $W"' EXIT
# A private copy, so a rebuild during the run cannot disturb it.
cp "$(swift build --show-bin-path)/clicker-tally" "$W/clicker-tally"
echo "ledger-faults: seed $SEED, work directory $W"
start=$(date +%s)
$SUDO python3 Tests/ledger-faults/faults.py --tally "$W/clicker-tally" --work "$W" --seed "$SEED" | tee "$W/faults.out"
rc=${PIPESTATUS[0]}
echo "ledger-faults: $(( $(date +%s) - start )) s"
# A network that goes silent under a connection (docs/LEDGER.md): the liveness settings give up on it.
start=$(date +%s)
$SUDO python3 Tests/ledger-faults/silent.py --tally "$W/clicker-tally" --work "$W" | tee "$W/silent.out"
silent=${PIPESTATUS[0]}
[ "$silent" -eq 0 ] || rc=1
echo "ledger-silent: $(( $(date +%s) - start )) s"
# Both summaries summed; a script that ended without one counts as a failure.
cat "$W/faults.out" "$W/silent.out" | awk -v rc="$rc" '
  /^ledger-(faults|silent): [0-9]+ passed, [0-9]+ failed/ { p += $2; f += $4; n++ }
  END { if (n < 2 && f == 0 && rc != 0) f = 1; print "ledger-faults and ledger-silent: " p+0 " passed, " f+0 " failed" }'

exit $rc
