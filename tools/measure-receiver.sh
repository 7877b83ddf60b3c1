#!/usr/bin/env bash
# A receiver's memory and CPU at N voters (issue 41's "a receiver's RSS and CPU at 1,000 voters").
#
# The release build of `clicker-tally receiver` (as scripts/install.sh builds it) on the BlueZ backend,
# as a receiver on a Raspberry Pi runs it: a private dbus-daemon stands in for the system bus and
# bluez-loadgen (Benchmarks/Benchmarks/BlueZLoadGen, compiled here with gcc) plays bluetoothd with
# adapter hci0 and N devices, each advertising a real sealed ballot of the poll (docs/vectors.py
# --room N, the protocol's independent Python implementation), re-sent as PropertiesChanged signals
# at RATE a second. The ledger is a private PostgreSQL server (Debian's binaries, initdb into a
# temporary directory, loopback, the server's durable defaults); `clicker-tally ledger open` registers
# the poll and prints the receiver's token, as an instructor would.
#
# Once the ledger holds all N voters (read with psql) and SETTLE seconds have passed, the receiver's
# CPU (utime + stime from /proc/PID/stat) is read over WINDOW seconds, then VmRSS, VmHWM, RssAnon and
# RssFile from /proc/PID/status. CPU per signal divides by the rate the generator says it kept. REPEATS runs for N voters and one for 1 voter (the floor).
#
#   tools/measure-receiver.sh                  (about 3 minutes)
#   VOTERS=1000 RATE=2000 WINDOW=20 SETTLE=3 REPEATS=3 tools/measure-receiver.sh
#   TALLY_BIN=BINARY tools/measure-receiver.sh     that binary, not built
set -uo pipefail
cd "$(dirname "$0")/.."
VOTERS=${VOTERS:-1000}; RATE=${RATE:-2000}; WINDOW=${WINDOW:-20}; SETTLE=${SETTLE:-3}; REPEATS=${REPEATS:-3}
CODE=4821-K7QXM-3PF9A
for tool in dbus-daemon python3 gcc pkg-config psql; do
  command -v $tool >/dev/null || { echo "$tool is missing (scripts/setup.sh --test)"; exit 1; }
done
PGBIN=${CLICKER_POSTGRES_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$PGBIN/initdb" ] || { echo "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (scripts/setup.sh --test)"; exit 1; }
if [ -n "${TALLY_BIN:-}" ]; then BIN=$TALLY_BIN
else
  scripts/release-build.sh --product clicker-tally >/dev/null 2>&1 || { echo "build failed: scripts/release-build.sh --product clicker-tally"; exit 1; }
  BIN=$(scripts/release-build.sh --show-bin-path)/clicker-tally
fi
TICK=$(getconf CLK_TCK)
W=$(mktemp -d)
PG=$(mktemp -d /tmp/clicker-pg-XXXXXX)   # the server's own directory (the postgres user's, as root)
BUSPID=; RPID=; GPID=
AS=(); [ "$(id -u)" = 0 ] && { chown postgres: "$PG"; AS=(runuser -u postgres --); }
cleanup() {
  [ -n "$RPID" ] && kill "$RPID" 2>/dev/null
  [ -n "$GPID" ] && kill "$GPID" 2>/dev/null
  [ -n "$BUSPID" ] && kill "$BUSPID" 2>/dev/null
  "${AS[@]}" "$PGBIN/pg_ctl" -D "$PG/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$W" "$PG"
}
trap cleanup EXIT

# The ledger's server: clicker / clicker-test over TCP (SCRAM), trust on its own socket.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd / && "${AS[@]}" sh -c "umask 077 && printf clicker-test > $PG/pw" \
  && "${AS[@]}" "$PGBIN/initdb" -D "$PG/data" -U clicker --pwfile="$PG/pw" --auth-local=trust --auth-host=scram-sha-256 \
       -E UTF8 --locale=C --no-sync >/dev/null \
  && "${AS[@]}" "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w -o "-p $PORT -k $PG -h 127.0.0.1" start >/dev/null) \
  || { echo "the PostgreSQL server did not start"; cat "$PG/log" 2>/dev/null; exit 1; }
SQL=(psql -X -q -t -A -h "$PG" -p "$PORT" -U clicker)

Tests/Harness/private-bus.sh "$W" > "$W/bus.addr" 2>"$W/bus.log" &
BUSPID=$!
for _ in $(seq 100); do [ -S "$W/bus" ] && break; sleep 0.05; done
[ -S "$W/bus" ] || { echo "dbus-daemon failed"; exit 1; }
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$W/bus
gcc -O2 -o "$W/bluez-loadgen" Benchmarks/Benchmarks/BlueZLoadGen/*.c $(pkg-config --cflags --libs dbus-1) \
  || { echo "cannot build bluez-loadgen"; exit 1; }

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# One run: a fresh database and journal, N voters. Prints
# "rss_kB hwm_kB anon_kB file_kB cores us_per_signal signals_per_s voters_in_ledger seconds_to_count".
run() {
  local n=$1 db=run$2 url receiver t0 t1 c0 c1 counted=0 start
  "${SQL[@]}" -d postgres -c "CREATE DATABASE $db" || return 1
  url="postgres://clicker:clicker-test@127.0.0.1:$PORT/$db"
  receiver=$("$BIN" ledger open --store "$url" --join-code "$CODE" --poll 1 --options 4 2>"$W/open.err") \
    || { echo "ledger open failed: $(cat "$W/open.err")" >&2; return 1; }
  python3 docs/vectors.py --room "$n" "$CODE" > "$W/room.txt"
  "$W/bluez-loadgen" --address "unix:path=$W/bus" --payloads "$W/room.txt" --devices "$n" --rate "$RATE" --seconds 3600 \
    > "$W/loadgen.log" 2>&1 &
  GPID=$!
  for _ in $(seq 100); do grep -q '^ready' "$W/loadgen.log" && break; sleep 0.05; done
  rm -f "$W/journal.sqlite"
  start=$(date +%s.%N)
  "$BIN" receiver --store "$receiver" --join-code "$CODE" --journal "$W/journal.sqlite" > "$W/receiver.log" 2>&1 &
  RPID=$!
  for _ in $(seq 120); do
    sleep 0.5
    counted=$("${SQL[@]}" -d "$db" -c "SELECT count(*) FROM ballots WHERE poll_id = 1" 2>/dev/null || echo 0)
    [ "${counted:-0}" -ge "$n" ] && break
  done
  if [ "${counted:-0}" -lt "$n" ]; then
    echo "the ledger holds ${counted:-0} of $n voters after 60 s; the receiver said:" >&2; tail -5 "$W/receiver.log" >&2
  fi
  local took; took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  sleep "$SETTLE"
  c0=$(ticks "$RPID"); t0=$(date +%s.%N)
  sleep "$WINDOW"
  c1=$(ticks "$RPID"); t1=$(date +%s.%N)
  local rss hwm anon file
  rss=$(status_kb "$RPID" VmRSS); hwm=$(status_kb "$RPID" VmHWM); anon=$(status_kb "$RPID" RssAnon); file=$(status_kb "$RPID" RssFile)
  kill "$GPID"; wait "$GPID" 2>/dev/null; GPID=
  kill "$RPID"; wait "$RPID" 2>/dev/null; RPID=
  # The rate the generator kept over its run, from its closing line.
  local rate; rate=$(python3 -c 'import json,sys; d = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1]); print(d["rate"])' "$W/loadgen.log" 2>/dev/null || echo "$RATE")
  awk -v r="$rss" -v h="$hwm" -v a="$anon" -v f="$file" -v c=$((c1 - c0)) -v k="$TICK" -v t0="$t0" -v t1="$t1" -v rate="$rate" \
      -v n="$counted" -v took="$took" \
    'BEGIN { s = t1 - t0; cores = c / k / s; printf "%s %s %s %s %.4f %.2f %.0f %s %s\n", r, h, a, f, cores, cores * 1e6 / rate, rate, n, took }'
  grep -q "counted" "$W/receiver.log" || { echo "the receiver said nothing at SIGTERM:" >&2; tail -5 "$W/receiver.log" >&2; }
}

echo "receiver: $BIN receiver on the BlueZ backend, bluez-loadgen as bluetoothd ($RATE signals/s), a private PostgreSQL;" \
     "load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
i=0
for n in $(for _ in $(seq "$REPEATS"); do echo "$VOTERS"; done) 1; do
  i=$((i + 1))
  r=$(run "$n" "$i") || exit 1
  echo "$n $r" >> "$W/runs"
  echo "$r" | awk -v n="$n" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" '{ printf "  %d voters: VmRSS %.1f MB (anonymous %.1f, file-backed %.1f), VmHWM %.1f MB; CPU %.2f %% of a core at %d signals/s, %.1f µs a signal; %s in the ledger %s s after start; load %s\n",
    n, $1 * 1024 / 1e6, $3 * 1024 / 1e6, $4 * 1024 / 1e6, $2 * 1024 / 1e6, $5 * 100, $7, $6, $8, $9, l }'
done
for n in "$VOTERS" 1; do
  awk -v n="$n" '$1 == n' "$W/runs" > "$W/sel"
  printf 'receiver, %d voters (%d runs): median VmRSS %.1f MB, VmHWM %.1f MB, CPU %.2f %% of a core, %.1f µs a signal (MB = 10^6 bytes)\n' \
    "$n" "$(wc -l < "$W/sel")" \
    "$(awk '{ print $2 }' "$W/sel" | median | awk '{ print $1 * 1024 / 1e6 }')" \
    "$(awk '{ print $3 }' "$W/sel" | median | awk '{ print $1 * 1024 / 1e6 }')" \
    "$(awk '{ print $6 }' "$W/sel" | median | awk '{ print $1 * 100 }')" \
    "$(awk '{ print $7 }' "$W/sel" | median)"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
