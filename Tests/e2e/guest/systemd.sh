# systemd.sh - the scenario set `systemd` (sourced by scenarios.sh): the Debian packages under a real
# systemd, in the bookworm-systemd guest (`Tests/e2e/run.sh --guest bookworm-systemd systemd`), whose
# PID 1 is systemd and whose dbus and bluetoothd are Debian's units. The packages come from the share
# (/mnt/host/deb, built by run.sh from the binaries under test); only the packaged D-Bus policy is on
# the bus (not the root policy of the other guests).

SVC=clicker-tally.service
main_pid() { systemctl show -p MainPID --value "$SVC"; }
active() { systemctl is-active "$SVC"; }
# as USER CMD...: CMD as USER with the user's groups (runuser: initgroups), its own HOME and state.
as() {
  local u=$1; shift
  runuser -u "$u" -- env HOME="$D/home-$u" XDG_STATE_HOME="$D/home-$u/state" "$@"
}
# tally_as USER ARGS...: the installed clicker-tally as USER on the system bus; stdout and stderr.
tally_as() { local u=$1; shift; as "$u" /usr/bin/clicker-tally "$@" 2>&1; }
# watch_shows TEXT: `clicker-tally watch` as the instructor in a 100x30 pseudo-terminal for 10 s (then
# stopped); its screen showed TEXT. (Keys typed into it through `script` did not reach it in this guest;
# that q detaches is checked on a pseudo-terminal by the unit tier.)
watch_shows() {
  sleep 14 | as instructor env TERM=xterm-256color script -qfec \
    "stty cols 100 rows 30; timeout -k 2 10 /usr/bin/clicker-tally watch" /dev/null > "$D/watch.out" 2>&1
  grep -a -o -m1 -- "$1" "$D/watch.out" || { tail -c 600 "$D/watch.out" | tr -d '\033'; return 1; }
}
# join_code: the join code `clicker-tally status` shows the instructor.
join_code() { tally_as instructor status | sed -n 's/^join code \([0-9A-Z-]*\)$/\1/p' | grep .; }
# status_json EXPR: the daemon's status (--json, as the instructor) checked with EXPR.
status_json() {
  tally_as instructor status --json > "$D/status.json" || { cat "$D/status.json"; return 1; }
  py json "$D/status.json" "$1"
}
# counted QUESTION EXPR: that question's results (as the instructor) checked with EXPR.
counted() {
  tally_as instructor results --question "$1" --json > "$D/results-$1.json" || { cat "$D/results-$1.json"; return 1; }
  py json "$D/results-$1.json" "$2"
}
continued_lines() { journalctl -b --no-pager -o cat -u "$SVC" | grep -c 'continued the open poll'; }
# restarted_from PID: the unit is active again under another main PID.
restarted_from() { local p; p=$(main_pid); [ "$(active)" = active ] && [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$1" ]; }
# mounted PID MOUNTPOINT ro|rw: in PID's mount namespace the last mount at MOUNTPOINT (the one on top)
# has that per-mount option (/proc/PID/mountinfo, field 6); prints the options.
mounted() {
  local o; o=$(awk -v m="$2" '$5 == m { o = $6 } END { print o }' "/proc/$1/mountinfo")
  echo "$2: ${o:-not a mount point}"; case ",$o," in *",$3,"*) ;; *) return 1 ;; esac
}
# in_sandbox PID CMD...: CMD in PID's mount namespace, as root (every capability: what stops a write
# there is the mount, not a permission).
in_sandbox() { nsenter -t "$1" -m -- "${@:2}"; }
# refused_write PID PATH REGEX: writing PATH in the daemon's mount namespace fails with an error that
# matches REGEX (printed); nothing is left at PATH.
refused_write() {
  local out; out=$(in_sandbox "$1" sh -c "echo probe > '$2'" 2>&1) && { echo "written: $2"; rm -f "$2"; return 1; }
  echo "$out"; echo "$out" | grep -qE "$3" && [ ! -e "$2" ]
}
# diagnose NAME: the units' state and journal, into NAME.* beside the checks.
diagnose() {
  systemctl status --no-pager "$SVC" dbus.service bluetooth.service > "$D/$1.status" 2>&1
  journalctl -b --no-pager -o short-monotonic -u "$SVC" -u dbus.service > "$D/$1.journal" 2>&1
  ps -ef > "$D/$1.ps" 2>&1
}
poll_is() {  # CODE QUESTION: the daemon shows that join code, and that question open
  local c; c=$(join_code) || { echo "no join code shown"; return 1; }
  echo "join code $c"; [ "$c" = "$1" ] && status_json "j['question']['number'] == $2 and j['question']['isOpen']"
}

systemd_unit() {
  check "systemd is PID 1" is systemd cat /proc/1/comm
  systemd_guest || { fail "this scenario needs the systemd guest: Tests/e2e/run.sh --guest bookworm-systemd systemd"; return 1; }
  check "bluetoothd runs as Debian's bluetooth.service" is active systemctl is-active bluetooth.service
  useradd --no-create-home --shell /bin/sh instructor && useradd --no-create-home --shell /bin/sh student
  mkdir -p "$D/home-instructor" "$D/home-student"
  chown instructor "$D/home-instructor"; chown student "$D/home-student"

  # Installing: apt resolves Depends: and Recommends: from the packages the image holds (no network).
  cp /mnt/host/deb/clicker-tally_*.deb /mnt/host/deb/clicker-vote_*.deb "$D/"
  check "apt-get install ./clicker-tally_*.deb ./clicker-vote_*.deb, offline" sh -c \
    "cd '$D' && DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y ./clicker-tally_*.deb ./clicker-vote_*.deb \
       < /dev/null > apt.log 2>&1; rc=\$?; grep -E '^(Setting up|E:)' apt.log; exit \$rc"
  diagnose after-install
  check "the postinst enabled the unit" is enabled systemctl is-enabled "$SVC"
  # The postinst starts the unit where systemd runs (deb-systemd-invoke); `systemctl start` is then a no-op.
  wait_until 90 "the unit to be active" is active active
  check "installing started it: active before any systemctl start" sh -c "systemctl show -p ActiveState,SubState,ExecMainStartTimestamp $SVC | tr '\n' ' '; [ \"\$(systemctl is-active $SVC)\" = active ]" \
    || { diagnose not-active; journalctl -b --no-pager -o cat -u "$SVC" | tail -n 15; return 1; }
  # ... at the first attempt: the bus had the policy's rules for the new accounts (the postinst reloads it).
  check "the first start succeeded: no restart, no failure in the journal" sh -c \
    "n=\$(systemctl show -p NRestarts --value $SVC); echo \"NRestarts=\$n\"; journalctl -b --no-pager -o cat -u $SVC | grep -E 'Failed to start|not allowed to own'; [ \"\$n\" = 0 ] && ! journalctl -b --no-pager -o cat -u $SVC | grep -q 'Failed to start'"
  check "systemctl start clicker-tally" systemctl start "$SVC"
  check "systemctl is-active clicker-tally" is active active
  local pid; pid=$(main_pid)
  check "the daemon runs as the system user clicker-tally" is clicker-tally stat -c %U "/proc/$pid"
  check "the journal has the daemon's own lines" sh -c "journalctl -b --no-pager -o cat -u $SVC | grep -m1 'serving org.clicker.Tally1'"

  # Over the system bus, as a member of `clicker` (the packaged policy).
  usermod -aG clicker instructor
  local code
  wait_until 60 "the daemon to answer the instructor" join_code
  code=$(join_code)
  check "a member of clicker: clicker-tally status shows the join code" is "$code" sh -c "echo '$code' | grep -E '^[0-9]{4}-[0-9A-Z]{5}-[0-9A-Z]{5}\$'"
  check "status --json: question 1 open" status_json "j['question']['number'] == 1 and j['question']['isOpen']"

  # A voter on hci1 (the installed clicker-vote; Bluetooth 4 controllers: no beacon, so --question 1).
  local E2E_BIN=/usr/bin
  start_voter v1 hci1 "$code" B --question 1
  wait_until 150 "the daemon to count v1's B" counted 1 'j["counts"]["B"] == 1'
  check "the daemon counts v1's B on question 1" counted 1 'j["counts"] == {"A":0,"B":1,"C":0,"D":0}'
  stop v1 TERM 30
  check "v1 exits 0 on SIGTERM" is 0 echo "$RC"

  # export: the daemon writes the files in its state directory.
  check "clicker-tally export" sh -c "runuser -u instructor -- env HOME='$D/home-instructor' /usr/bin/clicker-tally export > '$D/export.out' 2>&1; rc=\$?; cat '$D/export.out'; exit \$rc"
  local f; f=$(grep -m1 '\.json$' "$D/export.out")
  check "the export is in /var/lib/clicker, owned by clicker-tally" sh -c "case '$f' in /var/lib/clicker/*) stat -c '%U %a %n' '$f' | grep '^clicker-tally ' ;; *) echo 'not in /var/lib/clicker: $f'; exit 1 ;; esac"
  python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$f" > "$D/export.json" 2>&1
  check "the export's JSON: question 1 open, B 1" py json "$D/export.json" \
    'j["questions"][0]["number"] == 1 and j["questions"][0]["state"] == "open" and j["questions"][0]["counts"]["B"] == 1'

  # systemctl restart: --resume-open continues the same poll, question 1 still open, its vote kept.
  local continued; continued=$(continued_lines)
  check "systemctl restart clicker-tally" systemctl restart "$SVC"
  wait_until 90 "the unit active under a new PID" restarted_from "$pid"
  check "restarted: active under a new main PID" restarted_from "$pid"
  wait_until 60 "the daemon to answer again" join_code
  check "after restart: the same poll (join code) and question 1 open" poll_is "$code" 1
  check "after restart: B still counted" counted 1 'j["counts"] == {"A":0,"B":1,"C":0,"D":0}'
  check "the journal says the open poll was continued" sh -c \
    "journalctl -b --no-pager -o cat -u $SVC | grep 'continued the open poll' | tail -n1; [ \$(journalctl -b --no-pager -o cat -u $SVC | grep -c 'continued the open poll') -gt $continued ]"

  # kill -9 of the main process: Restart=on-failure brings it back with nothing lost (the voter is gone:
  # its vote can only come from the database).
  pid=$(main_pid)
  local restarts; restarts=$(systemctl show -p NRestarts --value "$SVC")
  check "kill -9 of the main PID $pid" kill -KILL "$pid"
  wait_until 90 "systemd to restart the daemon" restarted_from "$pid"
  check "systemd restarted it (Restart=on-failure): NRestarts $restarts -> 1 more" \
    is $((restarts + 1)) systemctl show -p NRestarts --value "$SVC"
  check "the journal has the kill" sh -c "journalctl -b --no-pager -o cat -u $SVC | grep -m1 -E 'Main process exited, code=killed, status=9/KILL'"
  wait_until 60 "the daemon to answer again" join_code
  check "after kill -9: the same poll and question 1 open" poll_is "$code" 1
  check "after kill -9: the voter counted before is still counted" counted 1 'j["counts"] == {"A":0,"B":1,"C":0,"D":0}'

  # next, as the instructor: question 2 opens, question 1 keeps its count.
  check "clicker-tally next" tally_as instructor next
  check "status --json: question 2 open" status_json "j['question']['number'] == 2 and j['question']['isOpen']"
  check "a member of clicker: clicker-tally watch shows the live view (question 2)" watch_shows "Question 2"
  check "question 1 keeps B 1" counted 1 'j["counts"] == {"A":0,"B":1,"C":0,"D":0}'

  # Hardening at run time, in the running daemon's own namespace.
  pid=$(main_pid)
  check "the daemon's / is mounted read-only" mounted "$pid" / ro
  check "its state directory /var/lib/clicker is mounted read-write" mounted "$pid" /var/lib/clicker rw
  local p
  for p in /etc/clicker-probe /usr/bin/clicker-probe /var/lib/clicker-probe /var/clicker-probe; do
    check "the daemon's namespace refuses a write to $p, even to root: read-only" refused_write "$pid" "$p" 'Read-only file system'
  done
  check "the daemon's namespace hides /root (ProtectHome)" refused_write "$pid" /root/clicker-probe 'Read-only file system|Permission denied'
  check "the daemon's user writes in its state directory /var/lib/clicker" sh -c \
    "nsenter -t $pid -m -- setpriv --reuid clicker-tally --regid clicker-tally --init-groups sh -c 'echo probe > /var/lib/clicker/.probe' \
     && cat /var/lib/clicker/.probe && rm /var/lib/clicker/.probe"
  check "no capabilities, no new privileges, a seccomp filter" sh -c \
    "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/$pid/status | tr -s '\t ' ' ' | tee /dev/stderr | \
     awk '/^CapEff/ && \$2 != \"0000000000000000\" {bad=1} /^CapBnd/ && \$2 != \"0000000000000000\" {bad=1} /^NoNewPrivs/ && \$2 != 1 {bad=1} /^Seccomp:/ && \$2 != 2 {bad=1} END {exit bad}'"

  # The packaged D-Bus policy: a user outside `clicker` is refused.
  check "clicker-tally status as a non-member fails: access denied" sh -c \
    "out=\$(runuser -u student -- env HOME='$D/home-student' /usr/bin/clicker-tally status 2>&1); rc=\$?; echo \"exit \$rc: \$out\"; [ \$rc != 0 ] && echo \"\$out\" | grep -q 'access denied'"
  check "the bus answers the non-member's Status call with AccessDenied" sh -c \
    "runuser -u student -- dbus-send --system --print-reply --dest=org.clicker.Tally1 /org/clicker/Tally1 org.clicker.Tally1.Status 2>&1 | grep -m1 'org.freedesktop.DBus.Error.AccessDenied'"
  check "the member's call still works" status_json "j['question']['number'] == 2"

  check "systemctl stop clicker-tally" systemctl stop "$SVC"
  check "the unit is inactive, not failed" is inactive active
  diagnose end
  note "journal: $(wc -l < "$D/end.journal") lines"
}
