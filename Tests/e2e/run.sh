#!/bin/bash
# Tests/e2e/run.sh - tier-3 end-to-end tests: clicker-tally and clicker-vote on a real
# BlueZ stack (bluetoothd 5.66, kernel 6.1, btvirt virtual LE controllers) in a QEMU guest.
#
#   Tests/e2e/run.sh [--no-build] [--list] [SCENARIO|all|hci ...]
#   Tests/e2e/run.sh [--guest NAME] --image-only   (builds and caches the guest image, nothing else)
#
# No argument runs the default set (see scenarios.txt); `hci` adds the raw-HCI ones.
# Needs root on a Debian 12 host with apt sources; installs qemu-system-x86, debootstrap
# and cpio when missing. One QEMU boot runs every selected scenario in sequence.
#
# Environment:
#   E2E_GUEST     bookworm (Debian 12, bluez 5.66, kernel 6.1; the default), trixie (Debian 13,
#                 bluez 5.82, kernel 6.12) or bookworm-systemd (Debian 12 booting systemd as PID 1,
#                 for the set `systemd`: the Debian package under a real systemd); --guest NAME says the same
#   E2E_DEB_DIR   (bookworm-systemd) take clicker-tally_*.deb from this directory instead of running
#                 scripts/package-deb.sh on the binaries under test
#   E2E_CACHE     guest image cache (default ${XDG_CACHE_HOME:-/var/cache}/clicker-e2e),
#                 keyed by a hash of image.sh, btvirt.sh and btvirt/*.patch; built from scratch when absent
#   E2E_OUT       logs and the 9p share (default <repo>/.build/e2e)
#   E2E_BIN_DIR   use clicker-tally/clicker-vote from this directory instead of building
#   E2E_SCENARIO_TIMEOUT  seconds per scenario inside the guest (default 420)
#   E2E_TIMEOUT   seconds for the whole QEMU run (default 240 + scenarios x per-scenario)
#   E2E_SETTLE, E2E_DISCOVERY_RESTART  guest timing knobs (defaults 8 s, 2 s)
#   E2E_BTMON=1   capture HCI traffic to $E2E_OUT/share/logs/hci.btsnoop
#   ACCEL=auto|kvm|tcg, MEM (MiB, default 1024), MIRROR (Debian mirror), E2E_QUIET=1 (no live console)
#
# Exit status 0 only when every selected scenario reported PASS from inside the guest.
# The last line is always "e2e: N passed, M failed".
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
for a in "$@"; do [ "${prev:-}" = --guest ] && export E2E_GUEST=$a; prev=$a; done   # before image.sh reads it
# bookworm-systemd: the bookworm image plus systemd (systemd/image.sh), booted with systemd as PID 1.
E2E_INIT=shell
if [ "${E2E_GUEST:-}" = bookworm-systemd ]; then E2E_INIT=systemd; E2E_GUEST=bookworm; fi
. "$HERE/image.sh"
[ $E2E_INIT = shell ] || . "$HERE/systemd/image.sh"
E2E_NAME=$E2E_SUITE$([ $E2E_INIT = shell ] || echo "-$E2E_INIT")

CACHE=${E2E_CACHE:-${XDG_CACHE_HOME:-/var/cache}/clicker-e2e}
OUT=${E2E_OUT:-$ROOT/.build/e2e$([ "$E2E_NAME" = bookworm ] || echo "-$E2E_NAME")}
STO=${E2E_SCENARIO_TIMEOUT:-420}
ACCEL=${ACCEL:-auto}
MEM=${MEM:-1536}   # both images hold a PostgreSQL server (image.sh)
BUILD=1
IMAGE_ONLY=0
SELECT=()

now() { date +%s.%N; }
dt()  { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
log() { echo "e2e [$(date -u +%T)] $*"; }
TIMINGS=()
timing() { TIMINGS+=("$1 $2s"); log "$1: $2s"; }

catalogue() { grep -vE '^\s*(#|$)' "$HERE/scenarios.txt"; }
# A scenario's set column may name several sets, comma-separated (default,debian13).
names_in_set() { catalogue | awk -v s="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == s) print $1 }'; }

# Anything that stops us before the guest reports is a loud failure with the summary line.
N_SELECTED=0
die() {
  echo "e2e: ERROR: $*" >&2
  echo "e2e: 0 passed, $(( N_SELECTED > 0 ? N_SELECTED : 1 )) failed"
  exit 1
}

while [ $# -gt 0 ]; do
  case $1 in
    --no-build) BUILD=0 ;;
    --image-only) IMAGE_ONLY=1 ;;
    --guest) shift ;;   # read above
    --list) catalogue; exit 0 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    all|default) mapfile -t -O "${#SELECT[@]}" SELECT < <(names_in_set default) ;;
    hci) mapfile -t -O "${#SELECT[@]}" SELECT < <(names_in_set hci) ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) if catalogue | awk '{print $1}' | grep -qx -- "$1"; then SELECT+=("$1")
       elif catalogue | awk '{print $2}' | tr , '\n' | grep -qx -- "$1"; then mapfile -t -O "${#SELECT[@]}" SELECT < <(names_in_set "$1")
       else echo "unknown scenario or set $1 (see --list)" >&2; exit 2; fi ;;
  esac
  shift
done
[ ${#SELECT[@]} -gt 0 ] || mapfile -t SELECT < <(names_in_set default)
N_SELECTED=${#SELECT[@]}
log "guest: Debian $E2E_SUITE$([ $E2E_INIT = shell ] || echo ", $E2E_INIT as PID 1"); scenarios: ${SELECT[*]}"

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot, 9p share)"
T_ALL=$(now)

# ---- 0. host tools ------------------------------------------------------------------
t=$(now)
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v debootstrap        >/dev/null || missing+=(debootstrap)
command -v cpio               >/dev/null || missing+=(cpio)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing host packages: ${missing[*]}"
  timeout 600 apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed"
fi
timing "host tools" "$(dt "$t")"

# ---- 1. binaries under test -------------------------------------------------------
if [ $IMAGE_ONLY = 0 ]; then
mkdir -p "$OUT/share/bin"
rm -rf "$OUT/share/logs" "$OUT/share/results.txt" "$OUT/share/bin"/*
t=$(now)
if [ -n "${E2E_BIN_DIR:-}" ]; then
  BIN=$E2E_BIN_DIR
  log "binaries from E2E_BIN_DIR=$BIN (not built)"
else
  SWIFT=$(command -v swift || true)
  [ -n "$SWIFT" ] || { [ -x /opt/swift/usr/bin/swift ] && SWIFT=/opt/swift/usr/bin/swift; } || true
  [ -n "$SWIFT" ] || die "swift not found (PATH or /opt/swift/usr/bin)"
  SB=(env SWIFT="$SWIFT" "$ROOT/scripts/release-build.sh" --package-path "$ROOT")   # as scripts/install.sh
  if [ $BUILD = 1 ]; then
    for p in clicker-tally clicker-vote; do
      log "building $p (release, static Swift stdlib)"
      "${SB[@]}" --product "$p" 2>&1 | tail -n 20 || die "swift build --product $p failed"
    done
  fi
  BIN=$("${SB[@]}" --show-bin-path)
fi
for p in clicker-tally clicker-vote; do
  [ -x "$BIN/$p" ] || die "$BIN/$p missing"
  cp "$BIN/$p" "$OUT/share/bin/$p"
done
timing "build" "$(dt "$t")"
# The systemd guest installs the Debian packages of these binaries (guest/systemd.sh).
if [ $E2E_INIT = systemd ]; then
  t=$(now)
  rm -rf "$OUT/share/deb"; mkdir -p "$OUT/share/deb"
  if [ -n "${E2E_DEB_DIR:-}" ]; then
    cp "$E2E_DEB_DIR"/clicker-tally_*.deb "$E2E_DEB_DIR"/clicker-vote_*.deb "$OUT/share/deb/" || die "no packages in E2E_DEB_DIR=$E2E_DEB_DIR"
  else
    "$ROOT/scripts/package-deb.sh" --bin-dir "$OUT/share/bin" --out "$OUT/share/deb" --compression gzip \
      || die "scripts/package-deb.sh failed"
  fi
  timing "packages" "$(dt "$t")"
fi
fi   # IMAGE_ONLY

# ---- 2. guest image (cached) ---------------------------------------------------------
t=$(now)
KEY=$( { cat "$HERE/image.sh" "$HERE/btvirt.sh" "$HERE"/btvirt/*.patch; echo "$E2E_SUITE"
         [ $E2E_INIT = shell ] || { cat "$HERE/systemd/image.sh"; echo "$E2E_INIT $E2E_PKGS"; }; } | sha256sum | cut -c1-16)
IMG=$CACHE/img-$E2E_NAME-$KEY
mkdir -p "$CACHE"
exec 9> "$CACHE/.lock"
flock 9
if [ -f "$IMG/.complete" ]; then
  timing "image (cached $IMG)" "$(dt "$t")"
else
  log "building the guest image in $IMG (no cache for key $KEY)"
  e2e_build_image "$IMG" "$CACHE/debcache" || die "guest image build failed"
  for old in "$CACHE"/img-"$E2E_NAME"-???????????????? "$CACHE"/img-????????????????; do [ "$old" = "$IMG" ] || rm -rf "$old"; done
  timing "image build" "$(dt "$t")"
fi
flock -u 9
if [ $IMAGE_ONLY = 1 ]; then echo "e2e: image ready: $IMG"; exit 0; fi

# ---- 3. overlay: /init and the suite (rewritten every run) ----------------------------
t=$(now)
OV=$OUT/overlay
rm -rf "$OV"; mkdir -p "$OV/e2e" "$OV/etc/bluetooth"
cp "$HERE/guest/init" "$OV/init"
cp "$HERE/guest/main.sh" "$HERE/guest/lib.sh" "$HERE/guest/scenarios.sh" "$HERE/guest/e2e.py" "$HERE/guest/adlen.py" "$HERE/guest/forger.py" "$HERE/guest/beacon_listen.py" "$HERE/guest/systemd.sh" "$HERE/../../docs/vectors.py" "$HERE/scenarios.txt" "$OV/e2e/"
chmod +x "$OV/init" "$OV/e2e/e2e.py"
# Adapters come up powered, as on a desktop.
printf '[Policy]\nAutoEnable=true\n' > "$OV/etc/bluetooth/main.conf"
# The daemon scenarios run clicker-tally daemon and its clients as root on the guest's system bus:
# root may own and call org.clicker.Tally1 there (the installed policy grants that to the service
# user and the instructors' group instead; Tests/policy checks that policy).
# Not in the systemd guest: there the packaged policy alone decides (guest/systemd.sh).
mkdir -p "$OV/etc/dbus-1/system.d"
[ $E2E_INIT = systemd ] || cp "$HERE/guest/clicker-e2e.conf" "$OV/etc/dbus-1/system.d/"
# The systemd guest: its own /init (mounts the share, then execs systemd), the suite as a unit that
# powers the guest off, and no login prompts or timers.
if [ $E2E_INIT = systemd ]; then
  cp "$HERE/systemd/init" "$OV/init"
  S=$OV/etc/systemd/system
  mkdir -p "$S/multi-user.target.wants"
  cp "$HERE/systemd/clicker-e2e.service" "$S/"
  ln -s ../clicker-e2e.service "$S/multi-user.target.wants/clicker-e2e.service"
  ln -s /lib/systemd/system/multi-user.target "$S/default.target"
  for u in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer \
           dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do ln -s /dev/null "$S/$u"; done
fi
(cd "$OV" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) > "$OUT/overlay.cpio"
cat "$IMG/base.cpio" "$OUT/overlay.cpio" > "$OUT/initrd.cpio"
timing "overlay" "$(dt "$t")"

# ---- 4. boot and run -------------------------------------------------------------------
if [ "$ACCEL" = auto ]; then
  # /dev/kvm without vmx/svm in cpuinfo (nested, no hw virt exposed) is unusably slow: TCG.
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; else ACCEL=tcg; fi
fi
case $ACCEL in
  kvm) ACCEL_ARGS=(-accel kvm -cpu host) ;;
  tcg) ACCEL_ARGS=(-accel tcg) ;;
  *) die "ACCEL must be auto, kvm or tcg" ;;
esac
QT=${E2E_TIMEOUT:-$(( 240 + N_SELECTED * STO ))}
NONCE=$(date +%s)-$$-$RANDOM
SCN_ARG=$(IFS=,; echo "${SELECT[*]}")
CMDLINE="console=ttyS0 panic=-1 quiet no_timer_check e2e.run=$NONCE e2e.scenarios=$SCN_ARG e2e.timeout=$STO"
CMDLINE+=" e2e.btmon=${E2E_BTMON:-0} e2e.settle=${E2E_SETTLE:-8} e2e.restart=${E2E_DISCOVERY_RESTART:-2}"
log "booting the guest (accel=$ACCEL, ${MEM} MiB, timeout ${QT}s)"
t=$(now)
set +e
timeout -k 10 "$QT" qemu-system-x86_64 "${ACCEL_ARGS[@]}" -m "$MEM" -smp 2 \
  -nographic -no-reboot -kernel "$IMG/vmlinuz" -initrd "$OUT/initrd.cpio" -append "$CMDLINE" \
  -virtfs local,path="$OUT/share",mount_tag=host0,security_model=none,id=host0 \
  < /dev/null 2>&1 | sed -u 's/\r$//' | tee "$OUT/console.log" | \
  if [ "${E2E_QUIET:-0}" = 1 ]; then cat > /dev/null; else sed -u 's/^/  guest| /'; fi
QRC=${PIPESTATUS[0]}
set -e
timing "qemu (boot + all scenarios + power-off)" "$(dt "$t")"
[ "$QRC" = 0 ] || log "qemu exited with status $QRC$([ "$QRC" = 124 ] && echo ' (total timeout)')"

# ---- 5. verdict: only what the guest wrote, for this run --------------------------------
R=$OUT/share/results.txt
if ! grep -q 'GUEST: shell up' "$OUT/console.log"; then
  tail -n 40 "$OUT/console.log" >&2
  die "the guest did not boot (console: $OUT/console.log)"
fi
[ -f "$R" ] || { tail -n 40 "$OUT/console.log" >&2; die "the guest wrote no results file (console: $OUT/console.log)"; }
[ "$(head -n1 "$R")" = "RUN $NONCE" ] || die "results file is not from this run (expected nonce $NONCE)"
B=$(awk '$1=="BOOT"{print $2}' "$R"); [ -n "$B" ] && timing "guest boot to suite start (guest uptime)" "$B"
S=$(awk '$1=="SETUP"{print $2" "$3}' "$R"); [ -n "$S" ] && timing "stack setup (${S% *})" "${S#* }"
grep -q '^END$' "$R" || log "results file has no END line: the guest stopped early"
PASS=0; FAILN=0; LINES=()
for s in "${SELECT[@]}"; do
  line=$(awk -v s="$s" '$1=="RESULT" && $2==s' "$R" | tail -n1)
  if [ -z "$line" ]; then
    FAILN=$((FAILN+1)); LINES+=("FAIL $s: no result from the guest (not run or cut short)")
    continue
  fi
  read -r _ _ verdict secs why <<< "$line"
  timing "scenario $s" "$secs"
  if [ "$verdict" = PASS ]; then PASS=$((PASS+1)); else FAILN=$((FAILN+1)); fi
  LINES+=("$verdict $s ($why, ${secs}s)")
  if [ -f "$OUT/share/logs/$s/checks" ]; then
    while IFS= read -r c; do LINES+=("    $c"); done < "$OUT/share/logs/$s/checks"
  fi
done

echo
echo "e2e: logs in $OUT/share/logs, console in $OUT/console.log"
echo "e2e: timings: $(IFS=';'; echo "${TIMINGS[*]}" | sed 's/;/; /g')"
echo "e2e: total wall time $(dt "$T_ALL")s, cache $(du -sh "$CACHE" 2>/dev/null | cut -f1) in $CACHE"
printf 'e2e: %s\n' "${LINES[@]}"
echo "e2e: $PASS passed, $FAILN failed"
[ "$FAILN" = 0 ] && [ "$PASS" -gt 0 ]
