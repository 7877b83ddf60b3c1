#!/usr/bin/env bash
# What a question's close check (schema version 6: a BEFORE trigger on `ballots` and `ballot_spans`)
# and a receiver's row-level security each cost a ledger write, in the same run (docs/PERFORMANCE.md,
# "Forty rooms, one PostgreSQL").
#
# A private PostgreSQL server (Debian's binaries, initdb into a temporary directory, loopback,
# synchronous_commit off so that the server's CPU, not the disk, is what is measured);
# `clicker-tally ledger open` migrates the ledger, registers a poll and prints a receiver token.
# pgbench then runs the receiver's statement (BallotLedger.upsertSQL, read from the source) in
# transactions of 50 ballots of random voters, CLIENTS clients for SECONDS seconds, four ways in
# turn, ROUNDS rounds: as the receiver's role (row-level security applies) and as the ledger's owner
# (it does not), each with the close triggers enabled and disabled. Prints ballots per second.
#
#   tools/measure-close-check.sh            (about 4 minutes)
#   ROUNDS=3 SECONDS_EACH=10 CLIENTS=2 tools/measure-close-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}; EACH=${SECONDS_EACH:-10}; CLIENTS=${CLIENTS:-2}; BATCH=50
PGBIN=${CLICKER_POSTGRES_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$PGBIN/pgbench" ] || { echo "no PostgreSQL server binaries with pgbench in /usr/lib/postgresql/*/bin (scripts/setup.sh --test)"; exit 1; }
swift build --product clicker-tally >/dev/null 2>&1 || { echo "build failed: swift build --product clicker-tally"; exit 1; }
BIN=$(swift build --show-bin-path)/clicker-tally
W=$(mktemp -d)
PG=$(mktemp -d /tmp/clicker-pg-XXXXXX)   # the server's own directory (the postgres user's, as root)
AS=(); [ "$(id -u)" = 0 ] && { chown postgres: "$PG"; AS=(runuser -u postgres --); }
cleanup() {
  "${AS[@]}" "$PGBIN/pg_ctl" -D "$PG/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$W" "$PG"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
("${AS[@]}" "$PGBIN/initdb" -D "$PG/data" -U clicker -A trust >/dev/null \
  && "${AS[@]}" "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w -o "-p $PORT -k $PG -h 127.0.0.1" start >/dev/null) \
  || { echo "the PostgreSQL server did not start"; exit 1; }
OWNER=postgres://clicker@127.0.0.1:$PORT/ledger
"$PGBIN/psql" -X -q "postgres://clicker@127.0.0.1:$PORT/postgres" -c "CREATE DATABASE ledger" \
  -c "ALTER DATABASE ledger SET synchronous_commit = off" || exit 1
RECEIVER=$(XDG_STATE_HOME=$W "$BIN" ledger open --store "$OWNER" --join-code 4821-K7QXM-3PF9A --poll 1 2>"$W/open.err" | head -n1)
[ -n "$RECEIVER" ] || { echo "ledger open failed: $(cat "$W/open.err")"; exit 1; }

# The receiver's statement, as BallotLedger writes it, its parameters pgbench's variables: poll 1,
# question 1, an anonymous voter, a random sequence and time, answer A, unverified.
python3 - "$BATCH" > "$W/batch.sql" <<'EOF' || { echo "BallotLedger.upsertSQL not found in Sources/ClickerLedger/BallotLedger.swift"; exit 1; }
import re, sys
src = open("Sources/ClickerLedger/BallotLedger.swift").read()
m = re.search(r'static let upsertSQL = """\n(.*?)\n\s*"""', src, re.S)
if not m:
    sys.exit(1)
sql = m.group(1)
out = []
for i in range(int(sys.argv[1])):
    out += [f"\\set v{i} random(1, 300000)", f"\\set s{i} random(1, 5)", f"\\set t{i} random(1, 1000000000)"]
out.append("BEGIN;")
for i in range(int(sys.argv[1])):
    values = {"$1": "1", "$2": "1", "$3": "0", "$4": f":v{i}", "$5": f":s{i}", "$6": "'\\x010000'::bytea",
              "$7": "false", "$8": f":t{i}", "$9": "'\\x010203040506'::bytea"}
    out.append(re.sub(r"\$[1-9]", lambda p: values[p.group(0)], sql) + ";")
out.append("COMMIT;")
print("\n".join(out))
EOF

sql() { "$PGBIN/psql" -X -q -At "$OWNER" -c "$1" >/dev/null; }
triggers() { sql "ALTER TABLE ballots $1 TRIGGER ballots_open_question; ALTER TABLE ballot_spans $1 TRIGGER spans_open_question"; }
rate() {  # URL: ballots per second
  "$PGBIN/pgbench" -n -f "$W/batch.sql" -c "$CLIENTS" -j "$CLIENTS" -T "$EACH" "$1" 2>"$W/pgbench.err" \
    | awk -v b=$BATCH '/^tps/ { printf "%.0f", $3 * b }'
}
echo "ballots per second, $CLIENTS clients, transactions of $BATCH ballots, $EACH s each, PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}')"
printf '%-6s %18s %18s %18s %18s %8s\n' round "receiver, close on" "receiver, off" "owner, close on" "owner, off" load
for r in $(seq 1 "$ROUNDS"); do
  triggers ENABLE; a=$(rate "$RECEIVER"); triggers DISABLE; b=$(rate "$RECEIVER")
  triggers ENABLE; c=$(rate "$OWNER"); triggers DISABLE; d=$(rate "$OWNER"); triggers ENABLE
  [ -n "$a" ] && [ -n "$b" ] && [ -n "$c" ] && [ -n "$d" ] || { echo "pgbench failed: $(tail -n3 "$W/pgbench.err")"; exit 1; }
  printf '%-6s %18s %18s %18s %18s %8s\n' "$r" "$a" "$b" "$c" "$d" "$(cut -d' ' -f1 /proc/loadavg)"
done
