#!/bin/sh
# The package test inside a clean Debian root (run.sh runs it as PID 1 of its own PID and mount
# namespaces, so every process it starts ends with it). /pkgs holds the packages of revision 1 and 2.
# Prints ok:/FAIL: lines; exits 1 if any check failed.
set -u
export DEBIAN_FRONTEND=noninteractive PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
mount -t proc proc /proc
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
fails=0; passes=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else fail "$what"; fi; }
# Retries a command every 0.2 s, at most N times: waiting for a daemon to be ready, not timing it.
retry() { n=$1; shift; while [ "$n" -gt 0 ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; n=$((n - 1)); done; return 1; }
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups "$@"; }
V1=$(ls /pkgs/clicker-tally_*-1_*.deb); VOTE1=$(ls /pkgs/clicker-vote_*-1_*.deb)
V2=$(ls /pkgs/clicker-tally_*-2_*.deb); VOTE2=$(ls /pkgs/clicker-vote_*-2_*.deb)
DB=/var/lib/clicker/clicker.sqlite
WANTS=/etc/systemd/system/multi-user.target.wants/clicker-tally.service

echo "== install (no systemd running; only Depends:, from Debian's archive)"
check "no Swift in the root" sh -c '! ls -d /usr/lib/swift /opt/swift /usr/share/swift 2>/dev/null | grep -q .' 
apt-get update -qq >/dev/null || fail "apt-get update in the root"
if apt-get install -y -qq --no-install-recommends "$V1" "$VOTE1" > /tmp/install.log 2>&1; then ok "apt-get installs both packages and their Depends:"
else fail "apt-get install"; tail -20 /tmp/install.log; fi
for f in /usr/bin/clicker-tally /usr/bin/clicker-vote /usr/lib/systemd/system/clicker-tally.service \
         /usr/lib/sysusers.d/clicker-tally.conf /usr/share/dbus-1/system.d/org.clicker.Tally1.conf \
         /usr/share/man/man1/clicker-tally.1.gz /usr/share/man/man1/clicker-vote.1.gz \
         /usr/share/bash-completion/completions/clicker-tally /usr/share/zsh/vendor-completions/_clicker-vote \
         /usr/share/fish/vendor_completions.d/clicker-tally.fish /usr/share/doc/clicker-tally/GUIDE.md.gz \
         /usr/share/doc/clicker-tally/examples/clicker-tally-web.conf /usr/share/doc/clicker-vote/copyright; do
  check "installed $f" test -s "$f"
done
for b in clicker-tally clicker-vote; do
  check "$b --version runs: $(/usr/bin/$b --version 2>&1)" /usr/bin/$b --version
  if ldd /usr/bin/$b | grep -q 'not found'; then fail "$b: ldd finds every library"; else ok "$b: ldd finds every library"; fi
done
# libpq is loaded on first use (not linked): the installed tally finds it (Depends: libpq5) and gets as
# far as the connection, which nothing answers here.
case $(/usr/bin/clicker-tally ledger close --store postgres://u:p@127.0.0.1:1/x --poll 1 2>&1) in
  *"cannot connect to PostgreSQL"*) ok "clicker-tally loads PostgreSQL's client when the ledger is used" ;;
  *) fail "clicker-tally ledger close: $(/usr/bin/clicker-tally ledger close --store postgres://u:p@127.0.0.1:1/x --poll 1 2>&1 | head -2)" ;;
esac
check "the unit runs /usr/bin/clicker-tally" grep -qx 'ExecStart=/usr/bin/clicker-tally daemon --resume-open' /usr/lib/systemd/system/clicker-tally.service
check "the drop-ins run /usr/bin/clicker-tally" sh -c '! grep -q /usr/local /usr/share/doc/clicker-tally/examples/*.conf'
check "system user clicker-tally, home /var/lib/clicker, no login shell" \
  sh -c 'getent passwd clicker-tally | awk -F: "\$3 < 1000 && \$6 == \"/var/lib/clicker\" && \$7 ~ /nologin|false/ { f = 1 } END { exit !f }"'
check "system group clicker-tally (the unit's Group=)" sh -c 'getent group clicker-tally | awk -F: "\$3 < 1000 { f = 1 } END { exit !f }"'
check "system group clicker (instructors)" sh -c 'getent group clicker | awk -F: "\$3 < 1000 { f = 1 } END { exit !f }"'
check "the unit is enabled (multi-user.target.wants link)" test "$(readlink -f $WANTS)" = "$(readlink -f /usr/lib/systemd/system/clicker-tally.service)"
check "nothing started without systemd" test ! -e /var/lib/clicker
man_text=$(zcat /usr/share/man/man1/clicker-tally.1.gz)
case $man_text in *".Sh NAME"*daemon*) ok "clicker-tally.1 names the subcommands" ;; *) fail "clicker-tally.1" ;; esac

echo "== a running daemon (a systemctl stand-in runs the unit), the D-Bus policy on Debian's dbus-daemon"
apt-get install -y -qq --no-install-recommends dbus > /tmp/dbus.log 2>&1 || { fail "apt-get install dbus"; tail /tmp/dbus.log; }
install -m 0755 /test/systemctl-stub /usr/bin/systemctl
mkdir -p /run/systemd/system /run/dbus
dbus-daemon --system --fork --nopidfile || fail "dbus-daemon --system"
# A simulated room instead of the radio (no Bluetooth here), as an administrator's drop-in would.
mkdir -p /etc/systemd/system/clicker-tally.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/bin/clicker-tally daemon --resume-open --simulate 12 --seed 3\n' \
  > /etc/systemd/system/clicker-tally.service.d/test.conf
adduser --quiet --disabled-password --gecos "" alice && adduser --quiet alice clicker
adduser --quiet --disabled-password --gecos "" mallory
systemctl start clicker-tally.service
if retry 300 as alice clicker-tally status --json; then ok "instructor alice (group clicker) reads the daemon's status"
else fail "the daemon did not answer alice"; cat /run/clicker-tally.log; fi
OLD_PID=$(cat /run/clicker-tally.pid)
check "the daemon runs as clicker-tally" test "$(stat -c %U /proc/$OLD_PID)" = clicker-tally
check "its database is in /var/lib/clicker (0700, clicker-tally)" sh -c "test -s $DB && test \"\$(stat -c '%a %U' /var/lib/clicker)\" = '700 clicker-tally'"
if as mallory clicker-tally status --json > /tmp/mallory.out 2>&1; then fail "mallory (not in clicker) read the status"
else grep -qi 'denied\|AccessDenied\|not allowed' /tmp/mallory.out && ok "mallory is refused by the policy: $(head -c 120 /tmp/mallory.out)" \
  || fail "mallory failed for another reason: $(cat /tmp/mallory.out)"; fi
if timeout 60 env STATE_DIRECTORY=/tmp/m setpriv --reuid=mallory --regid=mallory --init-groups \
     clicker-tally daemon --simulate 1 --db /tmp/m.sqlite > /tmp/m.log 2>&1; then fail "mallory's daemon ran"
else grep -qi 'denied\|not allowed' /tmp/m.log && ok "only clicker-tally may own org.clicker.Tally1: $(head -c 120 /tmp/m.log)" \
  || fail "mallory's daemon failed for another reason: $(head -c 300 /tmp/m.log)"; fi
voters() { as alice clicker-tally status --json | sed -n 's/.*"voters" *: *\([0-9]*\).*/\1/p' | head -1; }
if retry 600 sh -c "[ \"\$(setpriv --reuid=alice --regid=alice --init-groups clicker-tally status --json | sed -n 's/.*\"voters\" *: *\([0-9]*\).*/\1/p' | head -1)\" -ge 1 ]"; then
  ok "the simulated room votes: $(voters) voters"; else fail "no votes"; as alice clicker-tally status --json; fi
clicker-tally polls --db $DB > /tmp/polls.before 2>&1
VOTE_ID=$(awk '$1 == "vote" && / open / { print $2 }' /tmp/polls.before)
check "the database has one open poll, vote ${VOTE_ID:-none}" test -n "$VOTE_ID"
as alice clicker-tally close >/dev/null 2>&1 || fail "alice closes the question"
BEFORE=$(clicker-tally results --db $DB --poll "$VOTE_ID" --json 2>&1 | tr -d ' \n')
case $BEFORE in *'"voters"'*) ok "poll $VOTE_ID's results before the upgrade" ;; *) fail "results of poll $VOTE_ID: $BEFORE" ;; esac

echo "== upgrade to revision 2"
: > /run/systemctl.calls
if dpkg -i "$V2" "$VOTE2" > /tmp/upgrade.log 2>&1; then ok "dpkg -i of revision 2"; else fail "upgrade"; cat /tmp/upgrade.log; fi
check "version 2 installed" sh -c "dpkg-query -W -f '\${Version}' clicker-tally | grep -q -- '-2\$'"
check "postinst asked for a restart" grep -q 'restart clicker-tally.service' /run/systemctl.calls
NEW_PID=$(cat /run/clicker-tally.pid 2>/dev/null || echo none)
check "the old daemon ($OLD_PID) is gone" sh -c "! [ -d /proc/$OLD_PID ] || grep -q '^State:.*Z' /proc/$OLD_PID/status"
if retry 300 as alice clicker-tally status --json; then ok "a daemon answers after the upgrade"; else fail "no daemon after the upgrade"; tail /run/clicker-tally.log; fi
check "it runs the new binary (pid $NEW_PID, not a deleted file)" sh -c "readlink /proc/$NEW_PID/exe | grep -qx /usr/bin/clicker-tally"
# The restarted daemon (the unit's `--resume-open`) continues the open poll, its join code and votes
# (docs/GUIDE.md, "Upgrading"): the poll's results stay the same.
AFTER=$(clicker-tally results --db $DB --poll "$VOTE_ID" --json 2>&1 | tr -d ' \n')
check "the database keeps poll $VOTE_ID with its results and ballots" test "$AFTER" = "$BEFORE"
[ "$AFTER" = "$BEFORE" ] || { echo "   before: $BEFORE"; echo "   after:  $AFTER"; }
clicker-tally polls --db $DB > /tmp/polls.after 2>&1
echo "   polls after the upgrade:"; sed 's/^/     /' /tmp/polls.after
check "the restart continued poll $VOTE_ID, still open, and opened no other" \
  sh -c "grep -q '^vote $VOTE_ID .* open' /tmp/polls.after && [ \$(grep -c '^vote ' /tmp/polls.after) = 1 ]"
check "the user and groups stay" sh -c 'getent passwd clicker-tally && getent group clicker'
check "alice is still in clicker" sh -c 'id -nG alice | grep -qw clicker'

echo "== remove"
: > /run/systemctl.calls
if dpkg -r clicker-tally clicker-vote > /tmp/remove.log 2>&1; then ok "dpkg -r"; else fail "dpkg -r"; cat /tmp/remove.log; fi
check "prerm stopped the daemon" sh -c "grep -q 'stop clicker-tally.service' /run/systemctl.calls && ! [ -f /run/clicker-tally.pid ]"
check "binaries gone" sh -c '! [ -e /usr/bin/clicker-tally ] && ! [ -e /usr/bin/clicker-vote ]'
check "unit and policy gone" sh -c '! [ -e /usr/lib/systemd/system/clicker-tally.service ] && ! [ -e /usr/share/dbus-1/system.d/org.clicker.Tally1.conf ]'
check "the database stays after remove" test -s $DB

echo "== purge"
if dpkg -P clicker-tally clicker-vote > /tmp/purge.log 2>&1; then ok "dpkg -P"; else fail "dpkg -P"; cat /tmp/purge.log; fi
check "purge removes /var/lib/clicker" test ! -e /var/lib/clicker
check "purge removes the enablement" sh -c "! [ -L $WANTS ] && ! grep -rqs clicker-tally /var/lib/systemd/deb-systemd-helper-enabled"
check "dpkg knows neither package" sh -c '! dpkg-query -W clicker-tally clicker-vote'
check "the accounts stay (as documented)" getent passwd clicker-tally
left=$(find / -xdev \( -name '*clicker-tally*' -o -name '*clicker-vote*' -o -name 'org.clicker*' \) ! -path '/test/*' ! -path '/pkgs/*' 2>/dev/null | grep -v '^/etc/systemd/system/clicker-tally.service.d' | head)
check "no file of the packages is left${left:+: $left}" test -z "$left"

echo "== install again, where systemd runs"
: > /run/systemctl.calls
if dpkg -i "$V2" "$VOTE2" > /tmp/reinstall.log 2>&1; then ok "dpkg -i"; else fail "dpkg -i"; cat /tmp/reinstall.log; fi
check "postinst enabled the unit (systemctl preset) and started it" \
  sh -c "[ -L $WANTS ] && grep -q 'preset clicker-tally.service' /run/systemctl.calls && grep -q 'start clicker-tally.service' /run/systemctl.calls"
if retry 300 as alice clicker-tally status --json; then ok "the started daemon answers alice"
else fail "no daemon after installing"; cat /run/systemctl.calls; tail /run/clicker-tally.log; fi

echo "inroot: $passes passed, $fails failed"
[ "$fails" = 0 ]
