# lib.sh - helpers for the guest side of the end-to-end suite (sourced by bash).
#
# Stack: dbus-daemon, btvirt -L -l5 (hci0..hci4 on one virtual radio), bluetoothd.
# Binaries (clicker-tally, clicker-vote) come from the host over 9p: $E2E_BIN.
# A scenario runs in its own bash process with D=/tmp/e2e/<scenario> for its files;
# every `check` appends "ok: ..." or "FAIL: ..." to $D/checks.

E2E_BIN=${E2E_BIN:-/mnt/host/bin}
E2E_PY=/e2e/e2e.py   # executable, usable from sh -c too
JOIN=${E2E_JOIN:-4821-K7QXM-3PF9A}   # VOTEID-SECRET, the secret in Crockford base32
# How often the tally restarts discovery: btvirt reports an advertisement only when
# scanning or advertising is switched on, so this is what makes repeated reports arrive.
RESTART=${E2E_DISCOVERY_RESTART:-2}
# After bluetoothd has an advertisement, how long the tally gets to count it (and read GATT).
SETTLE=${E2E_SETTLE:-8}
NCTRL=5

up()  { cut -d' ' -f1 /proc/uptime; }
log() { echo "[$(up)] ${SCN:-e2e}: $*"; }
py()  { "$E2E_PY" "$@"; }
since() { awk -v a="$1" -v b="$(up)" 'BEGIN{printf "%.1f", b-a}'; }

# wait_until TIMEOUT_S DESCRIPTION CMD...: polls CMD every 0.5 s until it succeeds; 1 when
# TIMEOUT_S seconds of wall time have passed (logged).
# Gives up early when a process named in $WATCH (the scenario's tally and voters, see
# start_tally/start_voter/unwatch) has exited: nothing would then make CMD succeed.
WATCH=""
wait_until() {
  local t=$1 what=$2; shift 2
  local end=$(( SECONDS + t )) n
  while :; do
    "$@" >/dev/null 2>&1 && return 0
    [ $SECONDS -ge $end ] && break
    for n in $WATCH; do
      if ! kill -0 "$(pid_of "$n")" 2>/dev/null; then
        log "gave up waiting for: $what -- $n has exited: $(tail -n2 "$D/$n.err" 2>/dev/null | tr '\n' ' ')"
        return 1
      fi
    done
    sleep 0.5
  done
  log "TIMEOUT after ${t}s waiting for: $what"
  return 1
}

# check DESCRIPTION CMD...: runs CMD; records ok/FAIL with CMD's output as evidence.
check() {
  local what=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  out=$(printf '%s' "$out" | tr '\n' ' ' | cut -c1-400)
  if [ $rc -eq 0 ]; then
    echo "ok: $what -> $out" >> "$D/checks"; log "ok: $what -> $out"
  else
    echo "FAIL: $what -> $out" >> "$D/checks"; log "FAIL: $what -> $out"
  fi
  return $rc
}
# is EXPECTED CMD...: CMD prints exactly EXPECTED (what it printed is the evidence).
is() { local v; v=$("${@:2}"); echo "$v"; [ "$v" = "$1" ]; }
# isnt VALUE CMD...: CMD prints something else than VALUE.
isnt() { local v; v=$("${@:2}"); echo "$v"; [ "$v" != "$1" ]; }
# fail WHY: records a failed check without a command (setup trouble inside a scenario).
fail() { echo "FAIL: $*" >> "$D/checks"; log "FAIL: $*"; }
# note TEXT: evidence that is not a check.
note() { local t; t=$(printf '%s' "$*" | tr '\n' ' '); echo "note: $t" >> "$D/checks"; log "note: $t"; }

# ---- the Bluetooth stack ------------------------------------------------------

# bprop PATH IFACE NAME: a simple org.bluez property (boolean, number, string), via dbus-send
# (cheap: python3 takes seconds to start under TCG).
bprop() {
  dbus-send --system --print-reply=literal --dest=org.bluez "$1" org.freedesktop.DBus.Properties.Get \
    string:"$2" string:"$3" 2>/dev/null | awk 'NF {print $NF; exit}'
}
adapter_addr() { bprop "/org/bluez/$1" org.bluez.Adapter1 Address; }
active_instances() { bprop "/org/bluez/$1" org.bluez.LEAdvertisingManager1 ActiveInstances; }
discovering() {  # ADAPTER...: every one of them is discovering now
  local a
  for a in "$@"; do [ "$(bprop "/org/bluez/$a" org.bluez.Adapter1 Discovering)" = true ] || return 1; done
}
adapters_ready() {  # all NCTRL adapters known to bluetoothd and powered
  local i
  for i in $(seq 0 $((NCTRL - 1))); do
    [ "$(bprop /org/bluez/hci$i org.bluez.Adapter1 Powered)" = true ] || return 1
  done
}
# start_bluetoothd: starts it and waits until it has all NCTRL adapters powered. On a loaded
# host btvirt may answer an HCI command after the kernel's 2 s timeout and an adapter stays
# down; adapters still down are powered on again every 15 s.
# The bookworm-systemd guest runs systemd as PID 1: dbus and bluetoothd are its units there
# (Debian's dbus.service and bluetooth.service), as on an instructor's laptop.
systemd_guest() { [ -d /run/systemd/system ]; }
# There the suite is a unit, whose stdin is /dev/null: BlueZ's shell tools then print nothing and exit.
# They get the console, as /init's children do in the other guests (opened here, it controls nothing).
if systemd_guest; then btmgmt() { command btmgmt "$@" < /dev/console; }; fi
start_bluetoothd() {  # [TIMEOUT_S, default 120]
  if systemd_guest; then
    systemctl start bluetooth.service || { log "systemctl start bluetooth.service failed"; return 1; }
    systemctl show -p MainPID --value bluetooth.service > /run/bluetoothd.pid
  else
    /usr/libexec/bluetooth/bluetoothd -n -d >> /tmp/e2e/bluetoothd.log 2>&1 &
    echo $! > /run/bluetoothd.pid
  fi
  local t=${1:-120} i
  local end=$(( SECONDS + t )) next=$(( SECONDS + 15 ))
  until adapters_ready; do
    if [ $SECONDS -ge $end ]; then log "TIMEOUT after ${t}s waiting for bluetoothd with $NCTRL powered adapters"; return 1; fi
    if [ $SECONDS -ge $next ]; then
      for i in $(seq 0 $((NCTRL - 1))); do
        [ "$(bprop /org/bluez/hci$i org.bluez.Adapter1 Powered)" = true ] && continue
        log "hci$i still down: power on"; btmgmt --index $i power on > /dev/null 2>&1
      done
      next=$(( SECONDS + 15 ))
    fi
    sleep 0.5
  done
}
stop_bluetoothd() {  # SIG (default TERM)
  local pid; pid=$(cat /run/bluetoothd.pid 2>/dev/null) || return 0
  if systemd_guest; then
    [ "${1:-TERM}" = TERM ] || systemctl kill -s "${1}" bluetooth.service
    systemctl stop bluetooth.service; rm -f /run/bluetoothd.pid; return 0
  fi
  kill -"${1:-TERM}" "$pid" 2>/dev/null
  local i; for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; sleep 0.5; }
  rm -f /run/bluetoothd.pid
}
# Controller types (btvirt): `le`, Bluetooth 4.0 LE-only controllers (`btvirt -L`, legacy advertising
# only), the default; `bt5`, Bluetooth 5.2 dual-mode controllers (btvirt's default type: LE Extended
# Advertising, one random address per advertising set). scenarios.txt's third column picks one.
CONTROLLERS=le
btvirt_flags() { case $1 in le) echo -L ;; bt5) echo "" ;; *) return 1 ;; esac; }

# start_controllers [TYPE]: btvirt, then waits until the kernel has initialised all NCTRL controllers
# (they are then listed by the management interface). Fails at once when the kernel reports an
# HCI command timeout: btvirt was too slow to answer, and that controller stays unusable.
start_controllers() {
  local type=${1:-$CONTROLLERS} flags
  flags=$(btvirt_flags "$type") || { log "unknown controller type $type"; return 1; }
  dmesg -C 2>/dev/null
  # shellcheck disable=SC2086  # $flags is empty or one word
  btvirt $flags -l$NCTRL >> /tmp/e2e/btvirt.log 2>&1 &
  echo $! > /run/btvirt.pid
  CONTROLLERS=$type
  log "btvirt $flags -l$NCTRL: $NCTRL $type controllers"
  wait_until 60 "$NCTRL controllers initialised" controllers_settled || return 1
  if hci_timeout; then log "kernel: $(dmesg | grep -E 'failed: -110' | tail -n2 | tr '\n' ' ')"; return 1; fi
}
mgmt_indexes() { btmgmt info 2>/dev/null | grep -cE '^hci[0-9]+:'; }
hci_timeout() { dmesg 2>/dev/null | grep -qE 'Bluetooth: hci[0-9]+: .*failed: -110'; }
controllers_settled() { hci_timeout || [ "$(mgmt_indexes)" = "$NCTRL" ]; }
stop_controllers() {
  local pid; pid=$(cat /run/btvirt.pid 2>/dev/null) || return 0
  kill -KILL "$pid" 2>/dev/null; rm -f /run/btvirt.pid
  wait_until 30 "controllers gone" sh -c '[ -z "$(ls /sys/class/bluetooth)" ]'
}
# bring_up [TYPE]: controllers + bluetoothd, up to three attempts (the kernel log says why an
# attempt failed)
bring_up() {
  local try
  for try in 1 2 3; do
    start_controllers "${1:-$CONTROLLERS}" && start_bluetoothd 60 && return 0
    log "attempt $try failed; kernel says: $(dmesg | grep -i bluetooth | tail -n3 | tr '\n' ' ')"
    stop_bluetoothd KILL; stop_controllers
  done
  return 1
}
stack_setup() {
  mkdir -p /tmp/e2e /var/lib/bluetooth /etc/bluetooth
  modprobe hci_vhci || { log "modprobe hci_vhci failed"; return 1; }
  if systemd_guest; then
    systemctl start dbus.service || { log "systemctl start dbus.service failed"; return 1; }
  else
    dbus-uuidgen --ensure; mkdir -p /run/dbus
    dbus-daemon --system --fork || { log "dbus-daemon failed"; return 1; }
  fi
  if [ "${E2E_BTMON:-0}" = 1 ]; then btmon -w /tmp/e2e/hci.btsnoop > /dev/null 2>&1 & fi
  bring_up || { tail -30 /tmp/e2e/bluetoothd.log; return 1; }
  local i; for i in $(seq 0 $((NCTRL - 1))); do log "hci$i = $(adapter_addr hci$i)"; done
}
# stack_reset TYPE: between scenarios: no leftover clients, a fresh bluetoothd (no cached devices
# or registrations from the previous scenario); fresh controllers when the scenario wants another
# type, or when a fresh bluetoothd is not enough.
stack_reset() {
  local p want=${1:-le}
  for p in $(pgrep -f "$E2E_BIN/" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  pkill -KILL -x bluetoothctl 2>/dev/null
  stop_bluetoothd TERM
  rm -rf /var/lib/bluetooth/*
  if [ "$want" != "$CONTROLLERS" ]; then
    log "this scenario wants $want controllers (have $CONTROLLERS): fresh controllers"
    stop_controllers; bring_up "$want"; return
  fi
  start_bluetoothd 60 && return 0
  log "bluetoothd did not get its adapters back: fresh controllers"
  stop_bluetoothd KILL; stop_controllers
  bring_up
}

# ---- per-scenario processes -----------------------------------------------------

# observe: signal log of org.bluez in $D/events (devices, manufacturer data, connections)
# and a D-Bus method-call log in $D/dbus-calls (registrations and GATT reads).
start_observers() {
  py observe "$D/events" > "$D/observe.err" 2>&1 &
  echo $! >> "$D/pids"
  local m rules=()
  for m in RegisterAdvertisement UnregisterAdvertisement RegisterApplication UnregisterApplication \
           StartDiscovery StopDiscovery SetDiscoveryFilter Connect Disconnect ReadValue Release; do
    rules+=("type='method_call',member='$m'")
  done
  dbus-monitor --system "${rules[@]}" > "$D/dbus-calls" 2>&1 &
  echo $! >> "$D/pids"
  wait_until 60 "observer" grep -q 'observer up' "$D/events"
}

# start_tally NAME ARGS...: clicker-tally in the background; stdout NAME.out, stderr NAME.err.
start_tally() {
  local name=$1; shift
  log "start $name: clicker-tally $*"
  mkdir -p "$D/$name.state"
  XDG_STATE_HOME="$D/$name.state" "$E2E_BIN/clicker-tally" "$@" > "$D/$name.out" 2> "$D/$name.err" < /dev/null &
  eval "PID_$name=$!"
  echo $! >> "$D/pids"
  WATCH="$WATCH $name"
}

# start_voter NAME ADAPTER JOIN ANSWER [ARGS...]: clicker-vote (on --radio $VOTER_RADIO, default
# bluez) with its own XDG_STATE_HOME, stdin from the FIFO $D/NAME.in (held open on fd VFD_NAME;
# `revote NAME X` writes to it). An empty ANSWER starts a voter that follows the beacon and takes
# its answers from stdin only.
start_voter() {
  local name=$1 adapter=$2 join=$3 answer=$4 radio=${VOTER_RADIO:-bluez}; shift 4
  local given=("$join"); [ -n "$answer" ] && given+=("$answer")
  mkdir -p "$D/$name.state"
  rm -f "$D/$name.in"; mkfifo "$D/$name.in"
  log "start $name: clicker-vote --radio $radio --adapter $adapter $* ${given[*]}"
  XDG_STATE_HOME="$D/$name.state" "$E2E_BIN/clicker-vote" --radio "$radio" --adapter "$adapter" "$@" \
    "${given[@]}" < "$D/$name.in" > "$D/$name.out" 2> "$D/$name.err" &
  eval "PID_$name=$!"
  echo $! >> "$D/pids"
  WATCH="$WATCH $name"
  local fd; exec {fd}> "$D/$name.in"
  eval "VFD_$name=$fd"
}
revote() {  # NAME ANSWER
  local fd; eval "fd=\$VFD_$1"
  log "$1 switches to $2"
  echo "$2" >&"$fd"
}
pid_of() { eval "echo \$PID_$1"; }
alive() { local p; p=$(pid_of "$1"); kill -0 "$p" 2>/dev/null && echo "pid $p running"; }

# stop NAME SIGNAL TIMEOUT_S: signals the process and waits for it; sets RC to its exit
# status ("timeout" when it did not exit; it is then killed). Not in $(...): only this
# shell can wait for its children.
stop() {
  unwatch "$1"
  local pid; pid=$(pid_of "$1")
  kill -"$2" "$pid" 2>/dev/null
  local end=$(( SECONDS + $3 ))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"; wait "$pid" 2>/dev/null; RC=timeout
  else
    wait "$pid"; RC=$?
  fi
  log "$1 ended after SIG$2: exit status $RC"
}

# mfr ADAPTER ADDRESS: the latest manufacturer data (hex) under 0xffff that bluetoothd on
# ADAPTER announced for ADDRESS, from the observer's log; empty when none.
mfr() {
  grep -E " $1 $2 +ManufacturerData=" "$D/events" 2>/dev/null | tail -n1 | sed -n 's/.*"65535": "\([0-9a-f]*\)".*/\1/p'
}
seen() { [ -n "$(mfr "$1" "$2")" ]; }
# wait_seen ADAPTER ADDRESS [TIMEOUT]: waits for it (the tally's discovery is what makes it appear).
wait_seen() {
  wait_until "${3:-120}" "$1 to hold an advertisement from $2" seen "$1" "$2" || return 1
  log "$1 sees $2: $(mfr "$1" "$2")"
}
# voter_id NAME: the voter ID the voter printed ("voting B as voter 1a2b3c4d (sequence 1)").
voter_id() { sed -n 's/.* as voter \([0-9a-fr]*\).*/\1/p' "$D/$1.out" | head -n1; }
# addr_of_voter ADAPTER NAME: the address at which ADAPTER last held an advertisement carrying the
# voter ID that NAME printed (payload: magic, version/mode, vote ID, question, then the voter ID).
addr_of_voter() {
  local id; id=$(voter_id "$2"); [ -n "$id" ] || return 1
  grep -E " $1 [0-9A-F:]{17} +ManufacturerData=.*\"65535\": \"cb[0-9a-f]{8}$id" "$D/events" 2>/dev/null \
    | tail -n1 | awk '{print $3}' | grep .
}
# nrpa ADDRESS OWN: ADDRESS is a non-resolvable private address (two most significant bits 00, not
# all zeros or all ones) and not the adapter's own address OWN; prints it.
nrpa() {
  local a=${1^^}
  [ -n "$a" ] && [ "$a" != "${2^^}" ] && [ $(( 0x${a:0:2} >> 6 )) -eq 0 ] \
    && [ "$a" != 00:00:00:00:00:00 ] && [ "$a" != 3F:FF:FF:FF:FF:FF ] && echo "$a"
}
# release ADAPTER: power it off through bluetoothd, so a raw-HCI process may take it (user channel).
release() { btmgmt --index "${1#hci}" power off; }
gone_from_bluez() { ! dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" \
  org.freedesktop.DBus.Properties.Get string:org.bluez.Adapter1 string:Address >/dev/null 2>&1; }
unwatch() { local n w=""; for n in $WATCH; do [ "$n" = "$1" ] || w="$w $n"; done; WATCH=$w; }

# json NAME EXPR: EXPR (python) over the JSON object on NAME.out's last line; true when truthy.
json() { py json "$D/$1.out" "$2"; }

# finish_tally NAME: SIGINT, wait, check exit 0 and a JSON last line.
finish_tally() {
  stop "$1" INT 60
  check "$1 exits 0 after SIGINT" is 0 echo "$RC"
  check "$1 prints a JSON object as its last stdout line" json "$1" 'isinstance(j, dict)'
  log "$1 result: $(tail -n1 "$D/$1.out" | cut -c1-1500)"
}

scenario_cleanup() {
  local p
  for p in $(cat "$D/pids" 2>/dev/null); do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in $(cat "$D/pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
}
