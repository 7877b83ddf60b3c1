#!/bin/sh
# Tests dbus-policy/org.clicker.Tally1.conf against a real dbus-daemon (system-bus-like config in a temp
# dir that <include>s our policy). Needs root (useradd, setpriv), dbus-daemon, /usr/bin/python3 with
# python3-dbus and python3-gi. Prints one line per check; exits non-zero on any mismatch or missing tool.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
policy="$here/dbus-policy/org.clicker.Tally1.conf"
PY=/usr/bin/python3

die() { echo "FAIL: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "must run as root (creates users, switches uid)"
for t in dbus-daemon setpriv useradd groupadd userdel; do
    command -v "$t" >/dev/null 2>&1 || die "$t not found"
done
$PY -c 'import dbus, dbus.mainloop.glib; from gi.repository import GLib' 2>/dev/null \
    || die "$PY lacks dbus/gi (apt-get install python3-dbus python3-gi)"
[ -f "$policy" ] || die "$policy missing"

tmp=$(mktemp -d /tmp/clicker-policy.XXXXXX)
chmod 0755 "$tmp"
created_users=""
created_group=""
daemon_pid=""
service_pid=""
listener_pids=""
# Every process this script started is stopped here, whatever way it ends (each was started as the
# process itself, not through a shell function's subshell, so that its pid is the one killed).
cleanup() {
    for p in $service_pid $listener_pids $daemon_pid; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    for u in $created_users; do userdel "$u" || echo "warning: could not remove test user $u" >&2; done
    [ -n "$created_group" ] && groupdel "$created_group" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Users: the service user, an instructor (member of clicker) and an outsider.
if ! getent group clicker >/dev/null; then groupadd --system clicker || die "groupadd clicker"; created_group=clicker; fi
mkuser() {
    if ! id "$1" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$@" || die "useradd $1"
        created_users="$created_users $1"
    fi
}
mkuser clicker-tally
mkuser clicker-test-instructor --groups clicker
mkuser clicker-test-outsider
id -nG clicker-test-instructor | tr " " "\n" | grep -qx clicker || die "clicker-test-instructor is not in group clicker"
id -nG clicker-test-outsider | tr " " "\n" | grep -qx clicker && die "clicker-test-outsider must not be in group clicker"

cp "$here/Tests/policy/standin.py" "$tmp/standin.py"
chmod 0755 "$tmp/standin.py"

# A system-bus-like config: the default policy of Debian's system.conf, then our file. The only extra
# rule lets root own org.bluez for a BlueZ stand-in (our policy is not about who owns org.bluez).
cat > "$tmp/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$tmp/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <policy user="root">
    <allow own="org.bluez"/>
  </policy>
  <include>$policy</include>
</busconfig>
CONF

dbus-daemon --config-file="$tmp/bus.conf" --nofork --nopidfile --print-address=1 > "$tmp/address" 2> "$tmp/daemon.log" &
daemon_pid=$!
i=0
while [ ! -s "$tmp/address" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/address" ] || { cat "$tmp/daemon.log" >&2; die "dbus-daemon did not start"; }
grep -qi "configuration\|unknown\|parse\|invalid\|not allowed" "$tmp/daemon.log" && { cat "$tmp/daemon.log" >&2; die "dbus-daemon complained about the config"; }
export BUS="$(head -n1 "$tmp/address")"

failures=0
checks=0
as() { user=$1; shift; setpriv --reuid="$user" --regid="$user" --init-groups env BUS="$BUS" "$PY" "$tmp/standin.py" "$@"; }
as_root() { env BUS="$BUS" "$PY" "$tmp/standin.py" "$@"; }
# expect WHAT EXPECTED_EXIT COMMAND...   (0 = success, 3 = org.freedesktop.DBus.Error.AccessDenied)
expect() {
    what=$1; want=$2; shift 2
    out=$("$@" 2>&1); got=$?
    checks=$((checks + 1))
    if [ "$got" = "$want" ]; then
        echo "ok   $what"
    else
        echo "FAIL $what: expected exit $want, got $got: $out"
        failures=$((failures + 1))
    fi
}
DEST=org.clicker.Tally1
OBJ=/org/clicker/Tally1
IF=org.clicker.Tally1

# Ownership: nobody but the service user.
expect "outsider cannot own $DEST" 3 as clicker-test-outsider own $DEST
expect "instructor cannot own $DEST" 3 as clicker-test-instructor own $DEST
expect "root cannot own $DEST" 3 as_root own $DEST

# The service user owns the name (the stand-in service keeps it).
setpriv --reuid=clicker-tally --regid=clicker-tally --init-groups env BUS="$BUS" "$PY" "$tmp/standin.py" serve $DEST > "$tmp/service.out" 2>&1 &
service_pid=$!
i=0
while ! grep -q READY "$tmp/service.out" 2>/dev/null && [ $i -lt 50 ] && kill -0 $service_pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
checks=$((checks + 1))
if grep -q READY "$tmp/service.out"; then echo "ok   service user owns $DEST"; else
    echo "FAIL service user could not own $DEST: $(cat "$tmp/service.out")"; failures=$((failures + 1)); fi

# Control methods: instructors yes, others AccessDenied.
for m in Status JoinCode NewPoll OpenQuestion CloseQuestion NextQuestion Results Export ShowCounts; do
    expect "instructor calls $m" 0 as clicker-test-instructor call $DEST $OBJ $IF $m
    expect "outsider denied $m" 3 as clicker-test-outsider call $DEST $OBJ $IF $m
    expect "service user denied $m" 3 as clicker-tally call $DEST $OBJ $IF $m
done
expect "root denied Status" 3 as_root call $DEST $OBJ $IF Status
expect "root denied JoinCode (the join secret)" 3 as_root call $DEST $OBJ $IF JoinCode
# Nothing beyond the listed control methods, for anyone.
expect "instructor denied DumpVoters (not a control method)" 3 as clicker-test-instructor call $DEST $OBJ $IF DumpVoters
expect "outsider denied DumpVoters" 3 as clicker-test-outsider call $DEST $OBJ $IF DumpVoters
expect "instructor denied Properties.GetAll" 3 as clicker-test-instructor call $DEST $OBJ org.freedesktop.DBus.Properties GetAll
expect "outsider denied Introspect" 3 as clicker-test-outsider call $DEST $OBJ org.freedesktop.DBus.Introspectable Introspect
expect "instructor may Introspect" 0 as clicker-test-instructor call $DEST $OBJ org.freedesktop.DBus.Introspectable Introspect

# Signals of the service reach instructors only.
setpriv --reuid=clicker-test-instructor --regid=clicker-test-instructor --init-groups env BUS="$BUS" \
    "$PY" "$tmp/standin.py" listen 2 > "$tmp/listen-instructor" 2>&1 &
lp1=$!
setpriv --reuid=clicker-test-outsider --regid=clicker-test-outsider --init-groups env BUS="$BUS" \
    "$PY" "$tmp/standin.py" listen 2 > "$tmp/listen-outsider" 2>&1 &
lp2=$!
listener_pids="$lp1 $lp2"
i=0
while { ! grep -q READY "$tmp/listen-instructor" 2>/dev/null || ! grep -q READY "$tmp/listen-outsider" 2>/dev/null; } && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
as clicker-test-instructor call $DEST $OBJ $IF NextQuestion >/dev/null 2>&1
wait $lp1 $lp2
listener_pids=""
checks=$((checks + 2))
if grep -q "SIGNALS 1" "$tmp/listen-instructor"; then echo "ok   instructor receives the service's signal"; else
    echo "FAIL instructor did not receive the signal: $(cat "$tmp/listen-instructor")"; failures=$((failures + 1)); fi
if grep -q "SIGNALS 0" "$tmp/listen-outsider"; then echo "ok   outsider does not receive the service's signal"; else
    echo "FAIL outsider received or failed: $(cat "$tmp/listen-outsider")"; failures=$((failures + 1)); fi

# The service user may talk to BlueZ (a root-owned stand-in); others stay under the default deny.
kill "$service_pid" 2>/dev/null; wait "$service_pid" 2>/dev/null; service_pid=""
# Not through as_root: a shell function in the background is a subshell, whose pid is not the stand-in's.
env BUS="$BUS" "$PY" "$tmp/standin.py" serve org.bluez > "$tmp/bluez.out" 2>&1 &
service_pid=$!
i=0
while ! grep -q READY "$tmp/bluez.out" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
expect "service user calls org.bluez" 0 as clicker-tally call org.bluez /org/bluez org.bluez.AgentManager1 Ping
expect "outsider cannot call org.bluez through our policy" 3 as clicker-test-outsider call org.bluez /org/bluez org.bluez.AgentManager1 Ping

echo "$checks checks, $failures failures"
[ "$failures" = 0 ] || { echo "POLICY TEST FAILED" >&2; exit 1; }
echo "POLICY TEST PASSED"
