#!/bin/bash
# scenarios.sh NAME - one end-to-end scenario, run by main.sh in a fresh bash with
# D=/tmp/e2e/NAME and a freshly started bluetoothd. Every verdict comes from `check`
# lines in $D/checks; the catalogue (names, default set) is /e2e/scenarios.txt.
#
# Contract of the binaries under test (see Tests/e2e/README.md):
#   clicker-tally --radio bluez --adapter hciN --join-code C --question Q --json
#                 [--no-gatt-confirm] [--discovery-restart S] [--duration S]
#       stops on SIGINT/SIGTERM; with --json its last stdout line is one JSON object
#       {voteID, question, counts{A..D}, voters, changes, gattVerified, rejected{reason:n}, ballots[...]}
#       (anonymous polls: ballots list {voter, answer, sequence, gattVerified} while the question is
#       open, never an address; all scenarios here run anonymous polls)
#   clicker-vote --radio bluez --adapter hciN [--question Q] JOIN-CODE ANSWER
#       reads further answers from stdin; SIGTERM/SIGINT unregisters everything, exit 0
set -u
. /e2e/lib.sh
SCN=$1
cd "$D" || exit 1
trap scenario_cleanup EXIT
for i in $(seq 0 $((NCTRL - 1))); do eval "A$i=$(adapter_addr hci$i)"; done

# calls MEMBER: the D-Bus method calls named MEMBER seen in this scenario (header lines).
calls() { grep -E "member=$1\$" "$D/dbus-calls"; }
# call MEMBER REGEX: the first such call whose header matches REGEX.
call() { calls "$1" | grep -m1 -E "$2"; }
# voter_reads: bluetoothd called ReadValue on a GATT application outside /org/bluez, i.e. an
# ATT read arrived over the air and was forwarded to the voter.
voter_reads() { calls ReadValue | grep -v 'path=/org/bluez/' | grep -m1 .; }

tally_args() {  # the arguments every BlueZ tally gets
  echo --radio bluez --adapter hci0 --join-code "$JOIN" --question 1 --json --discovery-restart "$RESTART" --duration 3600
}

# ---------------------------------------------------------------------------------
radio_smoke() {
  local b
  start_observers
  for b in clicker-tally clicker-vote; do
    check "$b is present in the share" test -x "$E2E_BIN/$b"
    if head -c4 "$E2E_BIN/$b" | grep -q ELF; then
      check "$b needs no library the guest lacks" sh -c "ldd '$E2E_BIN/$b' > $b.ldd 2>&1; ! grep -E 'not found' $b.ldd && awk '{print \$1}' $b.ldd | tr '\n' ' '"
    fi
    check "$b --help runs in the guest (exit 0)" sh -c "timeout 60 '$E2E_BIN/$b' --help > $b.help 2>&1; rc=\$?; head -n2 $b.help; exit \$rc"
  done
  # The radio itself, with BlueZ's own tools: hci1 advertises 0xffff 01 02 03, hci0 scans.
  mkfifo p.in c.in
  bluetoothctl < p.in >> p.out 2>&1 & echo $! >> pids; exec 3> p.in
  bluetoothctl < c.in >> c.out 2>&1 & echo $! >> pids; exec 4> c.in
  echo "select $A1" >&3; echo "menu advertise" >&3; echo "manufacturer 0xffff 0x01 0x02 0x03" >&3; echo back >&3
  echo "select $A0" >&4; echo "scan le" >&4
  wait_until 60 "hci0 discovering" sh -c "sed 's/\x1b\[[0-9;]*[A-Za-z]//g' c.out | grep -aq 'Discovering: yes'"
  echo "advertise on" >&3
  wait_until 60 "advertisement registered" sh -c "sed 's/\x1b\[[0-9;]*[A-Za-z]//g' p.out | grep -aqE 'Advertising object registered|Failed'"
  check "hci1 has one active advertising instance" is 1 active_instances hci1
  local try
  for try in 1 2 3 4 5; do
    wait_until 5 "hci0 to see hci1" seen hci0 "$A1" && break
    echo "advertise off" >&3; sleep 1; echo "advertise on" >&3   # btvirt reports only on (re)enable
  done
  check "hci0 received hci1's manufacturer data 0xffff 01 02 03" is 010203 mfr hci0 "$A1"
  echo "scan off" >&4; echo "advertise off" >&3
  wait_until 30 "ActiveInstances 0" is 0 active_instances hci1
  check "hci1 has no active advertising instance after 'advertise off'" \
    is 0 active_instances hci1
  echo quit >&3; echo quit >&4; exec 3>&- 4>&-
}

# ---------------------------------------------------------------------------------
single_vote() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  start_voter v1 hci1 "$JOIN" B --question 1
  wait_seen hci0 "$A1" || fail "hci0 never received the voter's advertisement"
  sleep "$SETTLE"
  check "tally still running" alive tally
  finish_tally tally
  check "counts are exactly one B" json tally 'j["counts"] == {"A":0,"B":1,"C":0,"D":0}'
  check "one voter" json tally 'j["voters"] == 1'
  check "voteID 4821, question 1" json tally 'j["voteID"] == 4821 and j["question"] == 1'
  check "one ballot, answer B, with no address (anonymous poll)" \
    json tally "len(j['ballots']) == 1 and j['ballots'][0]['answer'] == 'B' and 'address' not in j['ballots'][0]"
  check "nothing rejected" json tally 'sum(j.get("rejected", {}).values()) == 0'
  check "with --no-gatt-confirm the ballot is not marked gattVerified" json tally 'j["ballots"][0]["gattVerified"] == False and j["gattVerified"] == 0'
  check "voter still running" alive v1
  # These Bluetooth 4 controllers cannot broadcast while they scan (a broadcast needs a new random
  # address, which the controller refuses during a scan: btmon shows LE Set Random Address -> Command
  # Disallowed), so the tally leaves its beacon off by default here (beacon-bt4 checks what it says).
  check "the BlueZ tally registers no beacon on a Bluetooth 4 controller" \
    sh -c "! grep -E 'path=/org/bluez/hci0; interface=org.bluez.LEAdvertisingManager1; member=RegisterAdvertisement' '$D/dbus-calls'"
  stop v1 TERM 30; note "voter exit status after SIGTERM: $RC"
  # (its stdout is read after it exits: a pipe or file gets it only when the buffer is flushed)
  check "the ballot's voter ID is the one the voter printed" json tally "j['ballots'][0]['voter'] == '$(voter_id v1)' != ''"
}

# ---------------------------------------------------------------------------------
change_vote() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  start_voter v1 hci1 "$JOIN" B --question 1
  wait_seen hci0 "$A1" || fail "hci0 never received the voter's advertisement"
  local first; first=$(mfr hci0 "$A1")
  sleep "$SETTLE"
  revote v1 C
  wait_until 120 "hci0 to receive the changed advertisement" isnt "$first" mfr hci0 "$A1" \
    || fail "hci0 never received a changed advertisement after the switch to C"
  log "hci0 now holds: $(mfr hci0 "$A1")"
  sleep "$SETTLE"
  finish_tally tally
  check "counts are one C, zero B" json tally 'j["counts"] == {"A":0,"B":0,"C":1,"D":0}'
  check "one change" json tally 'j["changes"] == 1'
  check "one voter, one ballot with answer C" json tally 'j["voters"] == 1 and len(j["ballots"]) == 1 and j["ballots"][0]["answer"] == "C"'
  note "ballot sequence after the change: $(json tally 'j["ballots"][0]["sequence"]')"
  stop v1 TERM 30; note "voter exit status after SIGTERM: $RC"
}

# ---------------------------------------------------------------------------------
link_ended() {  # hci1 saw hci0 connect, and the last word on that link is "disconnected"
  grep -qE "hci1 $A0 +Connected=true" events && grep -E "hci1 $A0 +Connected=" events | tail -n1 | grep -q false
}
gatt_verify() {
  start_observers
  # The HCI traffic, to measure how long each GATT read's connection stops the tally's scan.
  btmon -w "$D/hci.btsnoop" > /dev/null 2>&1 &
  local btmon=$!; echo "$btmon" >> "$D/pids"
  start_tally tally $(tally_args)
  start_voter v1 hci1 "$JOIN" A --question 1
  wait_seen hci0 "$A1" || fail "hci0 never received the voter's advertisement"
  wait_until 150 "bluetoothd to read the voter's characteristic (ReadValue to the voter)" \
    voter_reads \
    || fail "no ReadValue reached the voter's GATT application"
  wait_until 60 "the LE link to end" link_ended
  sleep "$SETTLE"
  finish_tally tally
  check "the voter's adapter (hci1) accepted an LE connection from hci0" grep -m1 -E "hci1 $A0 +Connected=true" events
  check "hci0 resolved the voter's GATT services" sh -c "grep -E 'hci0 $A1 gatt-service' events | tr -s ' ' | cut -d' ' -f5- | tr '\n' ' ' | grep ."
  check "the tally asked bluetoothd to read a characteristic on hci0" \
    call ReadValue 'path=/org/bluez/hci0/dev_'
  check "bluetoothd forwarded an ATT read to the voter's GATT application (ReadValue to the voter)" \
    voter_reads
  check "one ballot, answer A" json tally 'j["counts"] == {"A":1,"B":0,"C":0,"D":0} and len(j["ballots"]) == 1'
  check "ballot verified over GATT (gattVerified true)" json tally 'j["ballots"][0]["gattVerified"] == True and j["gattVerified"] == 1'
  # bluetoothd 5.66 here resolves the services of a link whose Connected never turns true: the tally must
  # read on that first link (it used to give up and connect twice more).
  check "one connection verified the ballot (Connect calls)" is 1 sh -c "grep -cE 'member=Connect\$' '$D/dbus-calls'"
  stop v1 TERM 30; note "voter exit status after SIGTERM: $RC"
  kill -INT "$btmon" 2>/dev/null; sleep 1
  # bluetoothd stops discovery for the connection and starts it again once connected (docs/PERFORMANCE.md, the "GATT read" row).
  check "after every GATT connection the tally's scan on hci0 started again (pauses in ms)" py scanpause "$D/hci.btsnoop" 0
}

# ---------------------------------------------------------------------------------
# Four voters on hci1-hci4 answer question 1 (with the voter's and the tally's extra arguments, e.g.
# --kind ranked --options 4); the tally on hci0 counts until it has heard all four, then stops.
four_voters_answer() {  # ANSWER1 ANSWER2 ANSWER3 ANSWER4 [ARGS...]
  local answers=("$1" "$2" "$3" "$4") i a
  shift 4
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm "$@"
  for i in 1 2 3 4; do start_voter v$i hci$i "$JOIN" "${answers[$((i - 1))]}" --question 1 "$@"; done
  for a in "$A1" "$A2" "$A3" "$A4"; do wait_seen hci0 "$a" 180 || fail "hci0 never received $a's advertisement"; done
  sleep "$SETTLE"
  finish_tally tally
}

# ---------------------------------------------------------------------------------
many_voters() {
  four_voters_answer A B B D
  check "counts are exactly A1 B2 C0 D1" json tally 'j["counts"] == {"A":1,"B":2,"C":0,"D":1}'
  check "four voters with four distinct voter IDs" json tally 'j["voters"] == 4 and len(set(b["voter"] for b in j["ballots"])) == 4'
  check "each voter's answer is under the voter ID that voter printed" json tally \
    "sorted((b['voter'], b['answer']) for b in j['ballots']) == sorted([('$(voter_id v1)','A'),('$(voter_id v2)','B'),('$(voter_id v3)','B'),('$(voter_id v4)','D')]) and '' not in [b['voter'] for b in j['ballots']]"
  check "no ballot carries an address (anonymous poll)" json tally "all('address' not in b for b in j['ballots'])"
  check "nothing rejected" json tally 'sum(j.get("rejected", {}).values()) == 0'
}

# ---------------------------------------------------------------------------------
ranked_vote() {
  # Partial rankings, counted by instant-runoff: first preferences A1 B2 C1 (D none); no majority
  # (2 of 4); C goes (tied with A for fewest, the later letter goes); its ballot moves to B: B 3 of 4.
  four_voters_answer 'A>B' 'B>A>C' 'C>B' 'B>' --kind ranked --options 4
  check "each voter's ranking is counted as cast, under its printed voter ID" json tally \
    "sorted((b['voter'], b['answer']) for b in j['ballots']) == sorted([('$(voter_id v1)','A>B'),('$(voter_id v2)','B>A>C'),('$(voter_id v3)','C>B'),('$(voter_id v4)','B>')])"
  check "the first round counts first preferences A1 B2 C1" json tally \
    "{v['option']: v['count'] for v in j['results']['rounds'][0]['votes'] if v['count']} == {'A': 1, 'B': 2, 'C': 1}"
  check "the last round is A1 B3 with four active ballots" json tally \
    "{v['option']: v['count'] for v in j['results']['rounds'][-1]['votes'] if v['count']} == {'A': 1, 'B': 3} and j['results']['rounds'][-1]['active'] == 4"
  check "instant-runoff elects B" json tally "j['results']['outcome'] == 'winner' and j['results']['winner'] == 'B'"
  check "nothing rejected" json tally 'sum(j.get("rejected", {}).values()) == 0'
}

# ---------------------------------------------------------------------------------
multi_vote() {
  four_voters_answer 'A+C' 'C+D' 'A+C' 'B+' --kind multi --options 4
  check "each option counts the ballots that selected it: A2 B1 C3 D1" json tally \
    "{o['option']: o['count'] for o in j['results']['options']} == {'A': 2, 'B': 1, 'C': 3, 'D': 1}"
  check "the exact combinations: A+C twice, C+D once, B alone once" json tally \
    "{c['answer']: c['count'] for c in j['results']['combinations']} == {'A+C': 2, 'C+D': 1, 'B+': 1}"
  check "four voters" json tally 'j["voters"] == 4'
  check "nothing rejected" json tally 'sum(j.get("rejected", {}).values()) == 0'
}

# ---------------------------------------------------------------------------------
reject_forged() {
  # same vote ID with another secret (last base32 character changed), and the next vote ID
  local vid=${JOIN%%-*} secret=${JOIN#*-} last=${JOIN: -1}
  local forged_code=${JOIN%?}$([ "$last" = A ] && echo B || echo A) other_code=$(( vid + 1 ))-$secret
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  start_voter forged hci1 "$forged_code" A --question 1
  start_voter otherpoll hci2 "$other_code" B --question 1
  start_voter honest hci3 "$JOIN" C --question 1
  local a
  for a in "$A1" "$A2" "$A3"; do wait_seen hci0 "$a" 180 || fail "hci0 never received $a's advertisement"; done
  sleep "$SETTLE"
  finish_tally tally
  check "only the honest vote is tallied" json tally 'j["counts"] == {"A":0,"B":0,"C":1,"D":0} and j["voters"] == 1'
  check "the only ballot is the honest voter's (hci3)" json tally "[b['voter'] for b in j['ballots']] == ['$(voter_id honest)'] != ['']"
  check "wrong secret counted as rejected badTag" json tally 'j["rejected"].get("badTag", 0) >= 1'
  check "other poll counted as rejected otherVoteID" json tally 'j["rejected"].get("otherVoteID", 0) >= 1'
}

# ---------------------------------------------------------------------------------
bluetoothd_restart() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  start_voter before hci1 "$JOIN" A --question 1
  wait_seen hci0 "$A1" || fail "hci0 never received the first voter's advertisement"
  sleep "$SETTLE"
  unwatch before   # how the first voter takes bluetoothd's death is not this scenario's concern
  log "killing bluetoothd (SIGKILL)"
  stop_bluetoothd KILL
  sleep 3
  check "tally survives bluetoothd's death" alive tally
  log "restarting bluetoothd"
  start_bluetoothd || fail "bluetoothd did not come back"
  start_voter after hci2 "$JOIN" D --question 1
  wait_seen hci0 "$A2" 180 || fail "after the restart hci0 never received the second voter's advertisement (tally did not resume discovery?)"
  sleep "$SETTLE"
  check "tally still running after the restart" alive tally
  finish_tally tally
  check "the vote accepted before the restart is still counted, the later one too" \
    json tally 'j["counts"] == {"A":1,"B":0,"C":0,"D":1} and j["voters"] == 2'
  check "ballots from both voters" json tally "sorted(b['voter'] for b in j['ballots']) == sorted(['$(voter_id before)','$(voter_id after)']) and '' not in ['$(voter_id before)','$(voter_id after)']"
  note "first voter after the restart: $(alive before || echo exited), ActiveInstances on hci1: $(active_instances hci1)"
}

# ---------------------------------------------------------------------------------
voter_sigterm() {
  start_observers
  start_voter v1 hci1 "$JOIN" B --question 1
  wait_until 120 "hci1 to have an active advertisement" \
    is 1 active_instances hci1
  check "while voting, hci1 has one active advertising instance" \
    is 1 active_instances hci1
  check "the voter registered a GATT application on hci1" \
    call RegisterApplication 'path=/org/bluez/hci1;'
  sleep 2
  stop v1 TERM 30
  check "the voter exits 0 on SIGTERM" is 0 echo "$RC"
  sleep 1
  check "hci1 has no active advertising instance afterwards" \
    is 0 active_instances hci1
  local who; who=$(calls RegisterApplication | sed -n 's/.* sender=\([^ ]*\) .*/\1/p' | head -n1)
  check "the voter ($who) called UnregisterAdvertisement on hci1" \
    call UnregisterAdvertisement "sender=$who .*path=/org/bluez/hci1;"
  check "the voter ($who) called UnregisterApplication on hci1" \
    call UnregisterApplication "sender=$who .*path=/org/bluez/hci1;"
  check "bluetoothd had put the voter's service into its local GATT database" \
    grep -m1 'database_add_service() handle' /tmp/e2e/bluetoothd.log
  check "bluetoothd removed it from the local GATT database" \
    grep -m1 'gatt_db_service_removed() Local GATT service removed' /tmp/e2e/bluetoothd.log
}

# ---------------------------------------------------------------------------------
# Raw-HCI backend: the process takes the adapter's HCI user channel, which the kernel grants
# only while the adapter is down, so the harness first powers it off through bluetoothd.
hci_voter() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  release hci1
  VOTER_RADIO=hci start_voter v1 hci1 "$JOIN" B --question 1
  # The raw-HCI voter advertises from a fresh non-resolvable private address, not hci1's own.
  wait_until 180 "hci0 to hold an advertisement carrying the raw-HCI voter's ID" addr_of_voter hci0 v1 \
    || fail "hci0 never received the raw-HCI voter's advertisement"
  local heard; heard=$(addr_of_voter hci0 v1); log "hci0 hears the raw-HCI voter at $heard"
  check "the raw-HCI voter advertises from a non-resolvable private address, not hci1's own ($A1)" nrpa "$heard" "$A1"
  sleep "$SETTLE"
  finish_tally tally
  check "the raw-HCI voter's B is counted" json tally 'j["counts"] == {"A":0,"B":1,"C":0,"D":0} and j["voters"] == 1'
  stop v1 TERM 30
  check "the raw-HCI voter exits 0 on SIGTERM" is 0 echo "$RC"
  check "the ballot is the raw-HCI voter's (its printed voter ID)" json tally "[b['voter'] for b in j['ballots']] == ['$(voter_id v1)'] != ['']"
}

# start_hci_tally: a raw-HCI tally on hci0, up once bluetoothd has lost hci0 to it.
start_hci_tally() {
  release hci0
  start_tally tally --radio hci --adapter hci0 --join-code "$JOIN" --question 1 --json --no-gatt-confirm --duration 3600
  wait_until 60 "hci0 to leave bluetoothd (user channel taken)" gone_from_bluez hci0 || fail "the raw-HCI tally never took hci0"
  sleep 3   # the tally resets the controller and enables scanning before the voter starts
}

hci_tally() {
  start_observers
  start_hci_tally
  start_voter v1 hci1 "$JOIN" C --question 1
  wait_until 120 "hci1 to advertise" is 1 active_instances hci1 || fail "the BlueZ voter never advertised"
  sleep $(( SETTLE * 2 ))
  finish_tally tally
  check "the raw-HCI tally counts the BlueZ voter's C" json tally 'j["counts"] == {"A":0,"B":0,"C":1,"D":0} and j["voters"] == 1'
  stop v1 TERM 30; note "voter exit status after SIGTERM: $RC"
  check "the ballot is the BlueZ voter's (its printed voter ID)" json tally "[b['voter'] for b in j['ballots']] == ['$(voter_id v1)'] != ['']"
}

hci_only() {
  start_observers
  start_hci_tally
  release hci1
  VOTER_RADIO=hci start_voter v1 hci1 "$JOIN" D --question 1
  sleep $(( SETTLE * 2 ))
  finish_tally tally
  check "the raw-HCI tally counts the raw-HCI voter's D" json tally 'j["counts"] == {"A":0,"B":0,"C":0,"D":1} and j["voters"] == 1'
  stop v1 TERM 30
  check "the raw-HCI voter exits 0 on SIGTERM" is 0 echo "$RC"
  check "the ballot carries the voter's printed ID and no address" \
    json tally "[(b.get('address'), b['voter']) for b in j['ballots']] == [(None, '$(voter_id v1)')] and '$(voter_id v1)' != ''"
}

# ---------------------------------------------------------------------------------
# The beacon (PROTOCOL.md §11.11) on real bluetoothd. Voters started with no answer and no
# --question follow it; their stdout is not a terminal, so they print one status line per change
# (docs/GUIDE.md, "The lines for a board's script").

# shows NAME REGEX: a status line of NAME matching REGEX; prints it.
shows() { grep -m1 -E "$2" "$D/$1.out"; }
# await_line NAME REGEX WHAT [TIMEOUT]: waits for that line, then checks it (the check is the evidence).
await_line() {
  wait_until "${4:-120}" "$1 to show: $3" shows "$1" "$2"
  check "$1 shows $3" shows "$1" "$2"
}
follower() { start_voter "$1" "$2" "${3:-$JOIN}" ""; }   # NAME ADAPTER [JOIN]
registered_on() {  # ADAPTER: a RegisterAdvertisement call to that adapter's bluetoothd object
  grep -E "path=/org/bluez/$1; interface=org.bluez.LEAdvertisingManager1; member=RegisterAdvertisement" "$D/dbus-calls" | head -n1
}
said() { note "$1 said: $(tr '\n' '|' < "$D/$1.out")"; }

beacon_follow() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm --title "Which city is the capital of Norway?" --options "Paris,Rome,Oslo"
  follower v1 hci1
  await_line v1 '^question 1 single 3 Which city is the capital of Norway\?$' \
    "question 1, single choice, 3 options, with the title: from the beacon alone"
  check "the tally registered its beacon on hci0 (a Bluetooth 5 controller: on by default)" registered_on hci0
  note "tally: $(grep -E 'beacon' "$D/tally.err" | head -n3)"
  revote v1 D
  await_line v1 '^not-offered D$' "not-offered D (the question has three options)" 60
  revote v1 C
  await_line v1 '^sending C$' "sending C"
  await_line v1 '^counted C$' "counted C: the tally acknowledged it over the beacon"
  finish_tally tally
  check "the tally counts exactly one C" json tally 'j["counts"].get("C") == 1 and sum(j["counts"].values()) == 1'
  await_line v1 '^poll-closed$' "poll-closed after the tally stopped" 60
  wait_until 60 "hci1 to stop advertising" is 0 active_instances hci1
  check "v1 stops advertising once the poll closed" is 0 active_instances hci1
  said v1
  stop v1 TERM 30
  check "v1 exits 0 on SIGTERM" is 0 echo "$RC"
}

beacon_room() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  local n answers=(- A B B D)
  for n in 1 2 3 4; do follower v$n hci$n; done
  for n in 1 2 3 4; do await_line v$n '^question 1 single 4$' "question 1 (hci$n)"; done
  for n in 1 2 3 4; do revote v$n "${answers[$n]}"; done
  for n in 1 2 3 4; do await_line v$n "^counted ${answers[$n]}\$" "counted ${answers[$n]} (hci$n)"; done
  finish_tally tally
  check "counts exactly A1 B2 D1 from four voters" json tally 'j["counts"] == {"A":1,"B":2,"C":0,"D":1} and j["voters"] == 4'
  for n in 1 2 3 4; do said v$n; stop v$n TERM 30; done
}

# One tally on two adapters (--adapter hci0,hci1): both discover and both broadcast the beacon; three
# followers on hci2..hci4 show the question, answer, show counted, and are counted once each.
test_gt() { [ "$1" -gt "$2" ] && echo 1 || echo 0; }
two_adapters() {
  start_observers
  start_tally tally --radio bluez --adapter hci0,hci1 --join-code "$JOIN" --question 1 --json \
    --discovery-restart "$RESTART" --duration 3600 --no-gatt-confirm
  local n a answers=(- - A B D)
  for n in 2 3 4; do follower v$n hci$n; done
  for n in 2 3 4; do await_line v$n '^question 1 single 4$' "question 1 (hci$n)"; done
  check "the tally registered its beacon on hci0" registered_on hci0
  check "the tally registered its beacon on hci1" registered_on hci1
  for n in 2 3 4; do revote v$n "${answers[$n]}"; done
  # Which adapter heard which ballot, while the voters still advertise (once counted they go quiet).
  # Both must discover; that both hear every voter is noted, not checked: with bluetoothd 5.82 hci1
  # missed one of the three for over 60 s in two runs of three.
  local both=0 on0=0 on1=0
  for a in "$A2" "$A3" "$A4"; do
    wait_seen hci0 "$a" 60 && on0=$((on0 + 1))
    wait_seen hci1 "$a" 60 && on1=$((on1 + 1))
    seen hci0 "$a" && seen hci1 "$a" && both=$((both + 1))
  done
  note "followers discovered: by hci0 $on0 of 3, by hci1 $on1 of 3, by both $both of 3"
  check "hci0 discovered followers" is 1 test_gt "$on0" 0
  check "hci1 discovered followers" is 1 test_gt "$on1" 0
  for n in 2 3 4; do await_line v$n "^counted ${answers[$n]}\$" "counted ${answers[$n]} (hci$n)"; done
  note "tally: $(grep -E 'radio|beacon' "$D/tally.err" | head -n4 | tr '\n' '|')"
  finish_tally tally
  check "counts exactly A1 B1 D1 from three voters, each counted once (both adapters heard $both of them)" json tally \
    'j["counts"] == {"A":1,"B":1,"C":0,"D":1} and j["voters"] == 3 and len(j["ballots"]) == 3'
  # With bluetoothd 5.69+ each adapter's extended-advertising probe (zero bytes, no clicker magic) is
  # heard by the other adapter: rejected as notOurs, as any other device's foreign data would be.
  check "no ballot rejected (only foreign data: notOurs)" json tally 'set(j.get("rejected", {})) <= {"notOurs"}'
  note "rejected: $(py json "$D/tally.out" 'j.get("rejected", {})' 2>&1)"
  for n in 2 3 4; do said v$n; stop v$n TERM 30; done
}

# tally_cli ARGS...: a client of the daemon on the guest's system bus.
tally_cli() { XDG_STATE_HOME="$D/cli.state" "$E2E_BIN/clicker-tally" "$@"; }
results_of() {  # QUESTION PYTHON-EXPR: the daemon's results of that question, checked
  tally_cli results --question "$1" --json > "$D/results-$1.json" 2>&1 || { cat "$D/results-$1.json"; return 1; }
  py json "$D/results-$1.json" "$2"
}
beacon_next() {
  start_observers
  start_tally tally daemon --radio bluez --adapter hci0 --join-code "$JOIN" --question 1 \
    --discovery-restart "$RESTART" --no-gatt-confirm
  wait_until 90 "the daemon on the system bus" tally_cli status --json || fail "the daemon never answered status"
  follower v1 hci1; follower v2 hci2
  await_line v1 '^question 1 single 4$' "question 1"
  await_line v2 '^question 1 single 4$' "question 1"
  revote v1 A; revote v2 B
  await_line v1 '^counted A$' "counted A"
  await_line v2 '^counted B$' "counted B"
  check "clicker-tally next opens question 2" tally_cli next
  await_line v1 '^question 2 single 4$' "question 2 without a restart"
  await_line v2 '^question 2 single 4$' "question 2 without a restart"
  revote v1 C; revote v2 C
  await_line v1 '^counted C$' "counted C on question 2"
  await_line v2 '^counted C$' "counted C on question 2"
  check "question 1 kept A1 B1" results_of 1 'j["counts"] == {"A":1,"B":1,"C":0,"D":0}'
  check "question 2 counts C2" results_of 2 'j["counts"] == {"A":0,"B":0,"C":2,"D":0}'
  # Until a voter hears question 2, its question-1 ballot is still on the air: those are rejected as otherQuestion.
  note "question 2: rejected $(py json "$D/results-2.json" 'j.get("rejected", {})' 2>&1)"
  # The daemon says "closed" for 3 s after SIGTERM, so stop it while both followers listen. (Followers
  # used to restart their discovery every 10 s; each StopDiscovery made bluetoothd remove every beacon
  # address heard so far, deaf for up to 5 s here, which swallowed those 3 s. They no longer restart:
  # PeripheralListening.swift.)
  wait_until 30 "hci1 and hci2 discovering" discovering hci1 hci2 || note "a follower was not discovering"
  stop tally TERM 60
  check "the daemon exits 0 on SIGTERM" is 0 echo "$RC"
  await_line v1 '^poll-closed$' "poll-closed once the daemon stopped" 60
  for n in 1 2; do said v$n; stop v$n TERM 30; done
}

# bluetoothd 5.69 and later carry extended frames (Debian 13's 5.82; Debian 12's 5.66 does not).
extended_bluez() {
  local v; v=$(/usr/libexec/bluetooth/bluetoothd --version 2>/dev/null)
  awk -v v="$v" 'BEGIN { split(v, p, "."); exit !(p[1] > 5 || (p[1] == 5 && p[2] >= 69)) }'
}

beacon_signed() {
  start_observers
  # No --join-code: the daemon draws the poll's key pair and the join code that commits to it (protocol 4).
  start_tally tally daemon --radio bluez --adapter hci0 --question 1 --discovery-restart "$RESTART" --no-gatt-confirm
  wait_until 90 "the daemon on the system bus" tally_cli status --json || fail "the daemon never answered status"
  local code
  code=$(dbus-send --system --print-reply=literal --dest=org.clicker.Tally1 /org/clicker/Tally1 \
    org.clicker.Tally1.JoinCode 2>&1 | tr -d ' ')
  check "the daemon drew its own join code" sh -c "echo '$code' | grep -Eq '^[0-9]{4}-[0-9A-Z]{5}-[0-9A-Z]{5}\$' && echo '$code' | cut -c1-4"
  follower v1 hci1 "$code"; follower v2 hci2 "$code"
  await_line v1 '^question 1 single 4$' "question 1"
  await_line v2 '^question 1 single 4$' "question 1"
  revote v1 A; revote v2 B
  await_line v1 '^counted A$' "counted A"
  await_line v2 '^counted B$' "counted B"
  note "tally: $(grep -E 'beacon on hci0' "$D/tally.err" | head -n1)"
  if extended_bluez; then
    check "bluetoothd $(/usr/libexec/bluetooth/bluetoothd --version) carries the beacon in extended frames" \
      grep -E 'beacon on hci0: extended advertising, 222 bytes per frame' "$D/tally.err"
    check "v1 verified the tally's key against the join code: only signed frames count" grep -m1 'the beacon is signed' "$D/v1.err"
    check "v2 verified the tally's key against the join code: only signed frames count" grep -m1 'the beacon is signed' "$D/v2.err"
  else
    check "bluetoothd $(/usr/libexec/bluetooth/bluetoothd --version): legacy frames, which cannot carry a signature" \
      grep -E 'beacon on hci0: legacy advertising' "$D/tally.err"
    check "no follower calls a legacy beacon signed" sh -c "! grep -h 'the beacon is signed' '$D/v1.err' '$D/v2.err'"
  fi
  check "question 1 counts A1 B1" results_of 1 'j["counts"] == {"A":1,"B":1,"C":0,"D":0}'
  wait_until 30 "hci1 and hci2 discovering" discovering hci1 hci2 || note "a follower was not discovering"
  stop tally TERM 60
  check "the daemon exits 0 on SIGTERM" is 0 echo "$RC"
  await_line v1 '^poll-closed$' "poll-closed once the daemon stopped" 60
  for n in 1 2; do said v$n; stop v$n TERM 30; done
}

# A classmate with the join code forges the beacon from another adapter (hci3): guest/forger.py hears the
# tally's STATE through bluetoothd, then broadcasts tagged STATE frames "question 9, multi-select, 3
# options" sealed with the join code, their counters 1 to 4 s ahead of the tally's, from one broadcast whose data
# changes every 0.5 s for 20 s. Signed extended frames (bluetoothd 5.69+): the followers refuse them and are counted
# on question 1 while the forger sends. Legacy frames (5.66) keep what docs/SECURITY.md says: the tally
# raises the forged-beacon alert, and the answers it counted stay counted.
forged_held() {  # ADAPTER: how many distinct forged STATE frames (question 9, multi, 3 options, open) its bluetoothd held
  grep -E "^ *[0-9.]+ $1 .*ManufacturerData=" "$D/events" | grep -oE 'cb4b[0-9a-f]{12}0943030a[0-9a-f]{24}' | sort -u | wc -l
}
back_counted() {  # NAME: the last question the follower showed is question 1, and it showed counted after it
  awk '/^question/ { q = $0; c = "" } /^counted/ { c = $0 } END { print q " / " c; exit !(q == "question 1 single 4" && c != "") }' "$D/$1.out"
}
at_least() { local v; v=$("${@:2}"); echo "$v"; [ "$v" -ge "$1" ]; }   # N CMD...: CMD prints a number >= N
beacon_forger() {
  start_observers
  start_tally tally daemon --radio bluez --adapter hci0 --question 1 --discovery-restart "$RESTART" --no-gatt-confirm
  wait_until 90 "the daemon on the system bus" tally_cli status --json || fail "the daemon never answered status"
  local code ext="" secondary=""
  code=$(dbus-send --system --print-reply=literal --dest=org.clicker.Tally1 /org/clicker/Tally1 \
    org.clicker.Tally1.JoinCode 2>&1 | tr -d ' ')
  check "the daemon drew its own join code" sh -c "echo '$code' | grep -Eq '^[0-9]{4}-[0-9A-Z]{5}-[0-9A-Z]{5}\$' && echo '$code' | cut -c1-4"
  extended_bluez && { ext=1; secondary=1M; }
  follower v1 hci1 "$code"; follower v2 hci2 "$code"
  await_line v1 '^question 1 single 4$' "question 1"
  await_line v2 '^question 1 single 4$' "question 1"
  if [ -z "$ext" ]; then
    # Legacy frames: a forged STATE can show another question, so the answers go out before the forger.
    revote v1 A; revote v2 B
    await_line v1 '^counted A$' "counted A (before the forger)"
    await_line v2 '^counted B$' "counted B (before the forger)"
  fi
  local t0; t0=$(up)
  python3 /e2e/forger.py hci3 "$code" 20 $secondary > "$D/forger.out" 2> "$D/forger.err" &
  echo $! >> "$D/pids"
  wait_until 150 "the forger to hear the tally's STATE on hci3" grep -q '^FORGING' "$D/forger.out" \
    || fail "the forger never heard the tally: $(tail -n3 "$D/forger.out" "$D/forger.err" | tr '\n' ' ')"
  if [ -n "$ext" ]; then
    # Signed frames: the followers answer while the forger sends.
    revote v1 A; revote v2 B
    await_line v1 '^counted A$' "counted A (while the forger sends)"
    await_line v2 '^counted B$' "counted B (while the forger sends)"
  fi
  wait_until 120 "the forger to finish" grep -q '^RESULT' "$D/forger.out" || fail "the forger did not finish"
  sleep 2
  check "bluetoothd still runs after the forger unregistered and exited" sh -c "kill -0 \$(cat /run/bluetoothd.pid) && echo running"
  note "forger: $(grep -E '^(HEARD|FORGING|RESULT)' "$D/forger.out" | head -n4) (started $(since "$t0") s ago)"
  note "forger refusals: $(grep -c 'refused org' "$D/forger.out") $(grep -m1 'refused org' "$D/forger.out")"
  check "the forger heard the tally's STATE through bluetoothd on hci3 and checked its tag with the join code" \
    grep -m1 '^HEARD counter' "$D/forger.out"
  check "bluetoothd on hci3 took the forger's broadcast ($( [ -n "$ext" ] && echo 'SecondaryChannel 1M' || echo 'legacy')) and 20 or more forged frames were set on it (one every 0.5 s asked; timers slip under TCG)" \
    awk '/^RESULT/ { print $5 " frames, registered " $7 ", refused " $9; ok = $5 >= 20 && $7 == 1 && $9 == 0 } END { exit !ok }' "$D/forger.out"
  check "hci1's bluetoothd held at least 3 distinct forged frames (question 9)" at_least 3 forged_held hci1
  check "hci2's bluetoothd held at least 3 distinct forged frames (question 9)" at_least 3 forged_held hci2
  check "the tally heard the forged STATE frames and raised the forged-beacon alert" \
    grep -m1 'forged beacon: an authentic STATE frame of this poll that this tally did not send' "$D/tally.err"
  if [ -n "$ext" ]; then
    check "v1 verified the tally's key against the join code: only signed frames count" grep -m1 'the beacon is signed' "$D/v1.err"
    check "v2 verified the tally's key against the join code: only signed frames count" grep -m1 'the beacon is signed' "$D/v2.err"
    check "no follower ever showed the forged question 9" sh -c "! grep -h '^question 9' '$D/v1.out' '$D/v2.out'"
  else
    note "followers that showed the forged question 9 (legacy frames allow it): $(grep -l '^question 9' "$D/v1.out" "$D/v2.out" | xargs -r -n1 basename | tr '\n' ' ')"
  fi
  # No ratchet (docs/SECURITY.md): once the forger stops, a follower it moved is back on the tally's
  # question, and the answer it kept is sent again and counted.
  for n in 1 2; do
    wait_until 60 "v$n back on question 1 and counted" back_counted v$n
    check "v$n is on question 1 and counted after the forger stopped" back_counted v$n
  done
  check "question 1 counts exactly the followers' A and B" results_of 1 'j["counts"] == {"A":1,"B":1,"C":0,"D":0}'
  stop tally TERM 60
  check "the daemon exits 0 on SIGTERM" is 0 echo "$RC"
  for n in 1 2; do said v$n; stop v$n TERM 30; done
}

# The gaps between the tally's STATE frames as another radio hears them (PROTOCOL.md §11.11: at most 1 s
# apart while it broadcasts). hci4 listens over the HCI user channel (guest/beacon_listen.py: a passive scan
# without duplicate filtering, every report timestamped), so the listener is not one more bluetoothd whose
# discovery stops and starts. Two windows while question 1 is open: 20 s with no voter, then three followers
# answering and changing their answers (the tally then sends ACKS between the STATE and TEXT frames).
# The followers run on the raw-HCI backend (hci1..hci3 taken from bluetoothd), as in a lecture, where each
# student's board has its own stack: in the guest one bluetoothd serves every controller, and followers
# registering and advertising through it would queue in front of the tally's frame changes, which no
# instructor's laptop sees.
heard_open_state() {  # the CLOCK_BOOTTIME second of the first STATE frame "question open" hci4 heard
  awk '($3 == "4b" || $3 == "43") && substr($5, 19, 1) ~ /[4-7]/ { print $1; exit }' "$D/heard" | grep .
}
state_gaps() {  # FROM TO: the listener's summary of the open-question STATE gaps in that window; fails over 1 s
  local r; r=$(python3 /e2e/beacon_listen.py gaps "$D/heard" "$1" "$2"); echo "$r" >> "$D/gaps"
  echo "$r" | tr '\n' ' '
  echo "$r" | awk 'NR == 1 { ok = $2 >= 5 && $6 <= 1.0 } END { exit !ok }'
}
all_counted() {  # A1 A2 A3: v1..v3 show those answers counted as their last line
  [ "$(tail -n1 "$D/v1.out")" = "counted $1" ] && [ "$(tail -n1 "$D/v2.out")" = "counted $2" ] && [ "$(tail -n1 "$D/v3.out")" = "counted $3" ]
}
beacon_state_gaps() {
  release hci4
  wait_until 30 "hci4 powered off" is false bprop /org/bluez/hci4 org.bluez.Adapter1 Powered || note "hci4 still powered"
  python3 /e2e/beacon_listen.py listen hci4 "$D/heard" > "$D/listener.out" 2> "$D/listener.err" &
  PID_listener=$!; echo $! >> "$D/pids"
  wait_until 60 "the listener scanning on hci4" grep -q '^LISTENING' "$D/listener.out" \
    || fail "the listener did not start: $(tail -n3 "$D/listener.err" | tr '\n' ' ')"
  note "listener: $(cat "$D/listener.out")"
  start_tally tally $(tally_args) --no-gatt-confirm --title "Which city is the capital of Norway?" --options "Paris,Rome,Oslo"
  wait_until 120 "hci4 to hear a STATE frame with question 1 open" heard_open_state || fail "hci4 never heard an open STATE"
  local t0 t1 t2 t3 n
  t0=$(heard_open_state); sleep 20; t1=$(up)
  check "no voter: STATE frames heard at most 1 s apart over 20 s (count, max, p99, p50 in s)" state_gaps "$t0" "$t1"
  for n in 1 2 3; do release hci$n; done
  for n in 1 2 3; do VOTER_RADIO=hci follower v$n hci$n; done
  for n in 1 2 3; do await_line v$n '^question 1 single 3 Which city' "question 1 (hci$n)"; done
  t2=$(up)
  local first=(- A B C) second=(- B C A)
  for n in 1 2 3; do revote v$n "${first[$n]}"; done
  wait_until 90 "the three voters counted" all_counted "${first[@]:1}" || note "not all counted: $(tail -qn1 v1.out v2.out v3.out | tr '\n' ' ')"
  for n in 1 2 3; do revote v$n "${second[$n]}"; done
  wait_until 90 "the three voters counted after a change" all_counted "${second[@]:1}" \
    || note "not all counted after the change: $(tail -qn1 v1.out v2.out v3.out | tr '\n' ' ')"
  # The window with voters lasts at least 20 s, as the one without: the followers go on hearing
  # STATE, now acknowledged and quiet, while the question stays open.
  sleep 3; while awk -v a="$(up)" -v b="$t2" 'BEGIN { exit !(a - b < 20) }'; do sleep 1; done; t3=$(up)
  check "three voters answering and changing (20 s at least): STATE frames at most 1 s apart (count, max, p99, p50 in s)" state_gaps "$t2" "$t3"
  note "frames heard: $(awk '{ n[$3]++ } END { for (k in n) printf "%s:%d ", k, n[k] }' "$D/heard")"
  note "tally: $(grep -E 'beacon on hci0' "$D/tally.err" | head -n1)"
  finish_tally tally
  note "tally: $(grep -E 'beacon: .*(confirms frame changes|frame changes,)' "$D/tally.err" | tr '\n' ' ')"
  check "the tally counts the changed answers B, C and A once each" json tally '{k: v for k, v in j["counts"].items() if v} == {"A":1,"B":1,"C":1}'
  stop listener TERM 10
  for n in 1 2 3; do stop v$n TERM 30; check "v$n exits 0 on SIGTERM" is 0 echo "$RC"; done
}

beacon_wrong_code() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  follower v1 hci1
  # Same vote ID, another secret: the tally's beacon does not authenticate under this code.
  follower v2 hci2 "${JOIN%?}$( [ "${JOIN: -1}" = A ] && echo B || echo A )"
  await_line v1 '^question 1 single 4$' "question 1 (the right join code)"
  await_line v2 '^no-beacon$' "no-beacon (a mistyped join code)" 60
  check "v2 never shows a question" sh -c "! grep -E '^question' '$D/v2.out'"
  finish_tally tally
  check "nothing was counted" json tally 'j["voters"] == 0'
  for n in 1 2; do said v$n; stop v$n TERM 30; done
}

# A roster poll: the student enrolls a device (clicker-vote enroll), the instructor imports its code,
# and the tally's beacon says the poll is a roster poll.
beacon_roster() {
  start_observers
  mkdir -p "$D/v1.state"
  local code
  code=$(XDG_STATE_HOME="$D/v1.state" "$E2E_BIN/clicker-vote" enroll) || fail "clicker-vote enroll failed: $code"
  printf 'name,student_id,enrollment_code\nAda Lovelace,s1,%s\n' "$code" > "$D/class.csv"
  check "the instructor imports the student's enrollment code" \
    env XDG_STATE_HOME="$D/tally.state" "$E2E_BIN/clicker-tally" roster import "$D/class.csv"
  start_tally tally $(tally_args) --roster
  start_voter v1 hci1 "$JOIN" "" --roster          # enrolled
  follower v2 hci2                                 # forgot --roster
  start_voter v3 hci3 "$JOIN" "" --roster          # a device the roster does not hold
  await_line v1 '^question 1 single 4$' "question 1 (enrolled, with --roster)"
  await_line v2 '^roster-mismatch$' "roster-mismatch (a roster poll voted without --roster)" 60
  await_line v3 '^question 1 single 4$' "question 1 (a device not on the roster also follows)"
  revote v1 B; revote v2 C; revote v3 D
  await_line v1 '^counted B$' "counted B: the tally acknowledged the roster ballot"
  await_line v3 '^sending D$' "sending D"
  sleep "$SETTLE"
  check "v2 advertises nothing" is 0 active_instances hci2
  wait_until 60 "v3 to say why it is not counted" grep -q 'not counted after 15 s' "$D/v3.err"
  check "v3 is never counted, and says after 15 s that its device may not be on the class list" \
    sh -c "! grep -E '^counted' '$D/v3.out' && grep -m1 -o 'not counted after 15 s: a roster poll counts only devices on the class list' '$D/v3.err'"
  finish_tally tally
  check "the tally counts the student's B, by name, and nothing else" \
    json tally 'j["counts"] == {"A":0,"B":1,"C":0,"D":0} and j["voters"] == 1 and [b["student"] for b in j["ballots"]] == ["Ada Lovelace (s1)"]'
  check "the device not on the roster is rejected as unknownVoter" json tally 'j["rejected"].get("unknownVoter", 0) > 0'
  await_line v1 '^poll-closed$' "poll-closed after the tally stopped" 60
  # The poll's closing changes nothing for a voter in the wrong mode: one line per change of status.
  sleep 2   # v2 may hear the closing a little after v1
  # (Before it, "no-beacon" may come and go while bluetoothd 5.82 is slow to put the first frame on the air.)
  check "v2 said roster-mismatch once, and nothing after it" sh -c "[ \"\$(sed -n '/^roster-mismatch\$/,\$p' '$D/v2.out' | tr '\n' ' ')\" = 'roster-mismatch ' ]"
  for n in 1 2 3; do said v$n; stop v$n TERM 30; done
}

beacon_bt4() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  follower v1 hci1
  start_voter v2 hci2 "$JOIN" B --question 1
  await_line v1 '^no-beacon$' "no-beacon: the tally's Bluetooth 4 adapter cannot broadcast while it scans" 60
  wait_seen hci0 "$A2" || fail "hci0 never received v2's advertisement"
  sleep "$SETTLE"
  finish_tally tally
  check "the tally says why the beacon is off" grep -m1 'beacon off: this adapter cannot broadcast while it scans' "$D/tally.err"
  check "the tally registered no advertisement on hci0" sh -c "! grep -E 'path=/org/bluez/hci0; interface=org.bluez.LEAdvertisingManager1; member=RegisterAdvertisement' '$D/dbus-calls'"
  check "a voter given --question 1 is still counted" json tally 'j["counts"] == {"A":0,"B":1,"C":0,"D":0}'
  for n in 1 2; do said v$n; stop v$n TERM 30; done
}

# The beacon across backends: a raw-HCI tally (legacy advertising from its public address, or one
# extended advertising set on a Bluetooth 5 controller) followed by a BlueZ voter, and a BlueZ tally
# followed by a raw-HCI voter.
hci_tally_beacon() {
  start_observers
  start_hci_tally
  follower v1 hci1
  await_line v1 '^question 1 single 4$' "question 1 from the raw-HCI tally's beacon"
  revote v1 B
  await_line v1 '^counted B$' "counted B"
  finish_tally tally
  check "the raw-HCI tally counts exactly one B" json tally 'j["counts"] == {"A":0,"B":1,"C":0,"D":0}'
  said v1; stop v1 TERM 30
}
hci_tally_beacon_bt5() { hci_tally_beacon; }
hci_voter_beacon() {
  start_observers
  start_tally tally $(tally_args) --no-gatt-confirm
  release hci1
  VOTER_RADIO=hci follower v1 hci1
  await_line v1 '^question 1 single 4$' "question 1 from the BlueZ tally's beacon, on the raw-HCI voter"
  revote v1 D
  await_line v1 '^counted D$' "counted D"
  finish_tally tally
  check "the BlueZ tally counts exactly one D" json tally 'j["counts"] == {"A":0,"B":0,"C":0,"D":1}'
  said v1; stop v1 TERM 30
}

# What bluetoothd takes of an extended broadcast, and what the guest's virtual controllers carry: the
# figures behind BlueZBeacon.extendedOverhead and the note on the Debian 13 guest (Tests/e2e/README.md).
# Run it with --guest trixie; not in CI.
adlen() {  # N [SECONDARY]: the RESULT line of one registration on hci0; a bluetoothd that died is restarted
  local out; out=$(timeout 20 python3 /e2e/adlen.py "$@" 2>&1 | grep RESULT)
  echo "${out:-RESULT $1 no-answer}" >> adlen.out
  if ! kill -0 "$(cat /run/bluetoothd.pid 2>/dev/null)" 2>/dev/null; then
    echo "CRASH bluetoothd after $1 ${2:-}" >> adlen.out
    start_bluetoothd 60 >/dev/null 2>&1 || fail "bluetoothd did not come back"
  fi
  echo "$out"
}
# heard ADAPTER N: the observer saw ADAPTER's bluetoothd hold exactly N zero bytes under company 0xffff
# from some device (adlen.py's data; each broadcast may come from a new address).
heard() { grep -qE " $1 [0-9A-F:]+ +ManufacturerData=\{\"65535\": \"(00){$2}\"\}" "$D/events"; }
bluez_ad_limits() {
  local v max n
  start_observers
  v=$(/usr/libexec/bluetooth/bluetoothd --version)
  max=$(busctl get-property org.bluez /org/bluez/hci0 org.bluez.LEAdvertisingManager1 SupportedCapabilities 2>/dev/null \
        | grep -o '"MaxAdvLen" y [0-9]*' | awk '{print $3}')
  note "bluetoothd $v, MaxAdvLen ${max:-not listed}; btvirt: $(cat /etc/clicker-e2e-btvirt 2>/dev/null || echo "Debian's")"
  if extended_bluez; then
    adlen 222 1M | grep -q accepted; check "bluetoothd $v takes 222 bytes with SecondaryChannel 1M" is 0 echo $?
    adlen 238 1M | grep -q accepted; check "bluetoothd $v takes 238 bytes (MaxAdvLen 251 less 13)" is 0 echo $?
    adlen 241 1M | grep -q refused; check "bluetoothd $v refuses 241 bytes" is 0 echo $?
  else
    adlen 222 1M | grep -q refused; check "bluetoothd $v refuses any extended broadcast over 31 bytes (222)" is 0 echo $?
  fi
  # The virtual controllers: an extended advertisement heard by a scanning controller (hci1). btvirt
  # reports it when hci0 switches advertising on (adlen.py removes it right after). One report event holds 229 bytes of data:
  # 222 of manufacturer data with Flags and the manufacturer header. btvirt does not split a longer
  # one into several reports (Tests/e2e/btvirt/btdev-ext-adv-report.patch): the scanner's kernel
  # drops the truncated event ("Malformed LE Event"), so 229 and 238 are only noted (not heard).
  mkfifo c.in
  bluetoothctl < c.in >> c.out 2>&1 & echo $! >> pids; exec 4> c.in
  echo "select $A1" >&4; echo "scan le" >&4
  wait_until 60 "hci1 discovering" sh -c "sed 's/\x1b\[[0-9;]*[A-Za-z]//g' c.out | grep -aq 'Discovering: yes'"
  for n in 27 50 200 222 229 238; do
    adlen $n 1M > /dev/null
    if wait_until 10 "hci1 to hold $n bytes" heard hci1 $n; then echo "HEARD $n bytes on hci1" >> adlen.out
    else echo "NOT HEARD $n bytes on hci1" >> adlen.out; fi
    sleep 1
    if pgrep -x btvirt > /dev/null; then echo "BTVIRT alive after $n bytes heard by a scanner" >> adlen.out
    else echo "BTVIRT gone after $n bytes heard by a scanner" >> adlen.out; break; fi
  done
  echo quit >&4; exec 4>&-
  if extended_bluez; then
    for n in 27 50 200 222; do
      check "btvirt carries a $n-byte extended advertisement to a scanning controller (hci1 holds it)" \
        grep -x "HEARD $n bytes on hci1" adlen.out
    done
    check "btvirt still runs after a scanner heard 222 bytes" grep -x "BTVIRT alive after 222 bytes heard by a scanner" adlen.out
  fi
  while read -r l; do note "$l"; done < adlen.out
}

# `doctor`: both doctors in this guest, one after the other (the Debian 13 guest's btvirt aborts when a
# scanning controller hears an extended advertisement over 27 bytes, so nothing scans elsewhere while the
# tally's doctor probes). Nothing here runs a tally: the voter's doctor hears none.
doctor() {
  local t0 v; t0=$(up)
  v=$(/usr/libexec/bluetooth/bluetoothd --version)
  start_observers
  timeout 120 "$E2E_BIN/clicker-tally" doctor --adapter hci0 --json > tally-doctor.out 2> tally-doctor.err; echo $? > tally-doctor.rc
  check "clicker-tally doctor exits 0: the tally can run here" is 0 cat tally-doctor.rc
  check "it reads bluetoothd $v from the running daemon" json tally-doctor "j['bluetoothd']['version'] == '$v' and 'running' in j['bluetoothd']['source']"
  check "org.bluez answers root" json tally-doctor 'j["access"]["state"] == "allowed"'
  check "hci0 is used: powered, extended advertising listed" \
    json tally-doctor 'j["adapter"] == "hci0" and [a for a in j["adapters"] if a["name"] == "hci0"][0]["powered"] and [a for a in j["adapters"] if a["name"] == "hci0"][0]["extendedAdvertising"]'
  check "five adapters listed" json tally-doctor 'len(j["adapters"]) == 5'
  check "a broadcast while scanning was tried, and worked" json tally-doctor 'j["broadcastWhileScanning"]["state"] == "worked"'
  if extended_bluez; then
    check "bluetoothd $v takes the extended probe: extended frames of 222 bytes" \
      json tally-doctor 'j["extendedFrames"]["state"] == "worked" and j["beacon"] == "extended" and j["frameLength"] == 222'
  else
    check "bluetoothd $v refuses the extended probe: legacy frames, and the advice names 5.69 and --radio hci" \
      json tally-doctor 'j["extendedFrames"]["state"] == "failed" and j["beacon"] == "legacy" and any("5.69" in a for a in j["advice"]) and any("--radio hci" in a for a in j["advice"])'
  fi
  check "figures for rooms of 40, 300 and 1,000" json tally-doctor '[f["voters"] for f in j["figures"]] == [40, 300, 1000]'
  check "the doctor left no advertisement on hci0" is 0 active_instances hci0
  timeout 120 "$E2E_BIN/clicker-vote" doctor --adapter hci1 --listen 3 --json > vote-doctor.out 2> vote-doctor.err; echo $? > vote-doctor.rc
  check "clicker-vote doctor exits 0: a voter can run here" is 0 cat vote-doctor.rc
  check "it tried a broadcast while scanning on hci1, and heard no tally (none runs)" \
    json vote-doctor 'j["adapter"] == "hci1" and j["broadcastWhileScanning"]["state"] == "worked" and j["tallyHeard"] == False'
  check "the voter's doctor left no advertisement on hci1" is 0 active_instances hci1
  timeout 60 "$E2E_BIN/clicker-tally" doctor --adapter hci9 > missing.out 2>&1; echo $? > missing.rc
  check "an adapter that is not there: exit status 3, and the report says so" sh -c "[ \$(cat missing.rc) = 3 ] && grep -m1 'hci9' missing.out"
  check "bluetoothd is still running" sh -c "kill -0 \$(cat /run/bluetoothd.pid)"
  check "btvirt is still running" pgrep -x btvirt
  note "tally doctor: $(tr '\n' ' ' < tally-doctor.err | head -c 300)"
  note "doctor scenario took $(since "$t0") s"
}

# ---------------------------------------------------------------------------------
# The ballot ledger on real BlueZ: PostgreSQL in the guest on loopback, a receiver on hci1 and the
# instructor's tally with --ledger on hci0.
LEDGER_URL=postgres://postgres@127.0.0.1:5432/postgres
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)   # the server's own tools, not Debian's wrappers
loopback_up() {  # the guest brings up no network interface, and has no ip(8): SIOCSIFFLAGS IFF_UP on lo
  python3 -c 'import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0))[:18])[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))'
}
start_postgres() {
  loopback_up || return 1
  mkdir -p "$D/pg" && chown postgres "$D/pg" && chmod 700 "$D/pg"
  runuser -u postgres -- "$PGBIN/initdb" -A trust -U postgres -D "$D/pg/data" > "$D/pg/initdb.log" 2>&1 || return 1
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$D/pg/data" -l "$D/pg/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p 5432 -k $D/pg -c fsync=off -c jit=off" start > /dev/null 2>&1
}
# The data directory goes once the server has stopped: its thousand files would be copied to the
# share one by one over 9p (minutes under TCG); its log stays.
stop_postgres() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$D/pg/data" -m fast stop > /dev/null 2>&1; rm -rf "$D/pg/data"; }
sql() { "$PGBIN/psql" "$LEDGER_URL" -Atc "$1" 2>> "$D/psql.err"; }
advertising() { [ "$(active_instances "$1")" -ge 1 ] 2>/dev/null; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
# A tally killed (SIGKILL: no closing payload; bluetoothd drops its advertisement at once): the
# receiver goes on broadcasting the tally's last beacon until it is 5 s old (BeaconRelay.stale), then
# stops. The tally renews its beacon at least once a second, so the receiver falls silent 4-6 s after
# the kill (give or take the polling of bluetoothd's ActiveInstances under TCG).
ledger_tally_killed() {
  start_tally tally2 --radio bluez --adapter hci0 --join-code "$JOIN" --question 1 --duration 3600 --no-gatt-confirm \
    --ledger "$LEDGER_URL" --ledger-poll 1 --ledger-journal "$D/tally2-journal.sqlite"
  wait_until 60 "tally2 broadcasting on hci0" advertising hci0 || fail "tally2 never broadcast: $(tail -c 400 tally2.err)"
  wait_until 60 "the receiver broadcasting tally2's beacon on hci1" advertising hci1 || fail "the receiver never relayed tally2's beacon"
  sleep 3
  stop tally2 KILL 10
  local killed; killed=$(uptime_s)
  wait_until 20 "bluetoothd dropped tally2's advertisement" is 0 active_instances hci0 || fail "hci0 still advertises"
  check "the receiver still broadcasts the killed tally's last beacon after hci0 fell silent" advertising hci1
  wait_until 20 "hci1 silent" is 0 active_instances hci1
  local silent; silent=$(uptime_s)
  check "the receiver fell silent 3-9 s after the kill (its beacon went stale at 5 s)" \
    awk -v k="$killed" -v s="$silent" 'BEGIN { d = s - k; printf "%.2f s\n", d; exit !(d >= 3 && d <= 9) }'
  check "the receiver says why" grep -m1 "the tally's beacon is not renewed in the ledger; not broadcasting" receiver.err
}
ledger_receiver() {
  start_observers
  start_postgres || { fail "PostgreSQL did not start in the guest: $(tail -n3 "$D/pg/server.log" "$D/pg/initdb.log" 2>/dev/null | tr '\n' ' ')"; return; }
  check "PostgreSQL runs in the guest, on loopback" is 1 sql "SELECT 1"
  note "$(sql 'SELECT version()' | cut -c1-60)"
  XDG_STATE_HOME="$D/cli.state" "$E2E_BIN/clicker-tally" ledger open --store "$LEDGER_URL" --join-code "$JOIN" --poll 1 \
    > token.out 2> token.err
  check "ledger open prints a receiver token" grep -m1 -oE '^postgres://clicker_receiver_[0-9a-f]{6}' token.out
  start_tally receiver receiver --store "$(head -n1 token.out)" --join-code "$JOIN" --radio bluez --adapter hci1 \
    --journal "$D/receiver-journal.sqlite"
  # v1 votes B while only the receiver listens, and leaves before the tally starts.
  start_voter v1 hci2 "$JOIN" B --question 1
  wait_until 120 "the receiver's ballot in the ledger" is 1 sql "SELECT count(*) FROM ballots" \
    || fail "the receiver never wrote v1's ballot: $(tr '\n' '|' < receiver.err | tail -c 600)"
  stop v1 TERM 30
  start_tally tally --radio bluez --adapter hci0 --join-code "$JOIN" --question 1 --json --discovery-restart "$RESTART" \
    --duration 3600 --no-gatt-confirm --ledger "$LEDGER_URL" --ledger-poll 1 --ledger-journal "$D/tally-journal.sqlite"
  # v2 votes C: both radios hear it.
  start_voter v2 hci3 "$JOIN" C --question 1
  wait_seen hci0 "$A3" || fail "hci0 never received v2's advertisement"
  wait_seen hci1 "$A3" || fail "hci1 never received v2's advertisement"
  wait_until 120 "both ballots in the ledger" is 2 sql "SELECT count(*) FROM ballots" || fail "the ledger has $(sql 'SELECT count(*) FROM ballots') ballots"
  # The receiver broadcasts the tally's beacon, as the ledger has it, through bluetoothd on hci1.
  wait_until 60 "the receiver broadcasting on hci1" advertising hci1 \
    || fail "no advertisement on hci1 while the tally runs: $(tr '\n' '|' < receiver.err | tail -c 600)"
  check "the receiver says it broadcasts the tally's beacon" grep -m1 "beacon: broadcasting the tally's beacon" receiver.err
  note "tally: $(grep -E 'beacon on hci0' tally.err | head -n1)"
  if extended_bluez; then
    # bluetoothd 5.69+: the tally's frames are extended, and the receiver's bluetoothd takes them as they are.
    check "bluetoothd $(/usr/libexec/bluetooth/bluetoothd --version): the tally beacons in extended frames" \
      grep -m1 -E 'beacon on hci0: extended advertising, [0-9]+ bytes per frame' tally.err
    check "the receiver's bluetoothd took every extended payload (none refused, none too long for its radio)" \
      sh -c "! grep -m1 -E 'refused the tally.s beacon|longer than this radio broadcasts' receiver.err"
  fi
  sleep "$SETTLE"
  finish_tally tally
  check "the tally's end stops the receiver's broadcast too" wait_until 30 "hci1 silent" is 0 active_instances hci1
  check "the receiver says why" grep -m1 "the tally stopped broadcasting; not broadcasting" receiver.err
  check "the tally counts one B (heard only by the receiver, before it started) and one C" \
    json tally 'j["counts"] == {"A":0,"B":1,"C":1,"D":0} and j["voters"] == 2'
  check "v1's ballot in the tally is the one its voter sent (voter ID)" \
    json tally "any(b['voter'] == '$(voter_id v1)' != '' and b['answer'] == 'B' for b in j['ballots'])"
  # With bluetoothd 5.69+ another adapter's extended-advertising probe (zero bytes under the clicker's
  # company ID, no magic) may be heard by the tally: rejected as notOurs, as any foreign data would be.
  check "no ballot rejected (only foreign data: notOurs)" json tally 'set(j.get("rejected", {})) <= {"notOurs"}'
  note "rejected: $(py json "$D/tally.out" 'j.get("rejected", {})' 2>&1)"
  # v2's ballot is the tally's own only when its radio counted it before the ledger brought it in.
  check "the tally says what the ledger committed of its own, and nothing is left in its journal" \
    sh -c "grep -m1 -E 'ledger poll 1: it committed [0-9]+ ballots? this tally counted(; its last read counted [0-9]+ more from receivers)?$' tally.err && ! grep -q 'wait in the journal' tally.err"
  check "no NOTICE from PostgreSQL on the tally's stderr" sh -c "! grep -m1 NOTICE tally.err"
  check "the ledger counts what the tally counts: one B, one C, each voter once" \
    is "0:B|1,0:C|1" sh -c "'$PGBIN/psql' '$LEDGER_URL' -Atc \"SELECT voter_mode || ':' || chr(65 + get_byte(answer, 2)) AS k, count(*) FROM ballots GROUP BY k ORDER BY k\" | paste -sd,"
  ledger_tally_killed
  stop receiver TERM 60
  check "the receiver exits 0 after SIGTERM with its journal empty" sh -c "[ '$RC' = 0 ] && grep -m1 -E '^counted [0-9]+ ballots; the ledger committed [0-9]+$' receiver.out"
  stop v2 TERM 30
  stop_postgres
}

. /e2e/systemd.sh   # the set `systemd` (the bookworm-systemd guest)

fn=$(echo "$SCN" | tr '-' '_')
if ! grep -qE "^$SCN " /e2e/scenarios.txt || [ "$(type -t "$fn")" != function ]; then
  fail "unknown scenario $SCN"; exit 2
fi
log "A0=$A0 A1=$A1 A2=$A2 A3=$A3 A4=$A4"
"$fn" || true   # verdicts are the check lines; a non-zero exit here means the script itself broke
exit 0
