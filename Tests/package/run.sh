#!/usr/bin/env bash
# The Debian packages, end to end: builds clicker-tally and clicker-vote twice (revisions 1 and 2,
# scripts/package-deb.sh), checks them with lintian (any tag the overrides do not explain fails), then
# in a clean Debian 12 root (debootstrap --variant=minbase, cached) installs revision 1 with apt from
# Debian's archive and checks the files, the accounts, the unit's enablement, a daemon run as the unit
# says (a systemctl stand-in, Tests/package/systemctl-stub) against Debian's dbus-daemon and the
# packaged policy, the upgrade to revision 2 (the daemon restarted onto the new binary, the database
# kept), remove and purge (Tests/package/inroot.sh).
#   sudo Tests/package/run.sh [--bin-dir DIR]      DIR: release binaries (default: scripts/release-build.sh)
# Needs root and network (Debian's archive). Installs debootstrap, dpkg-dev, lintian, binutils with apt
# when missing. The root is cached in ${PKG_CACHE:-/var/cache/clicker-package}.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN_DIR=""
while [ $# -gt 0 ]; do
  case $1 in
    --bin-dir) BIN_DIR=$(cd "$2" && pwd); shift 2 ;;
    *) echo "usage: $0 [--bin-dir DIR]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "package test: needs root (debootstrap, chroot)" >&2; exit 2; }
start=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - start )) s)"; }
host_passed=0; host_failed=0
ok() { echo "ok: $*"; host_passed=$((host_passed + 1)); }
fail() { echo "FAIL: $*"; host_failed=$((host_failed + 1)); }

need=()
for t in debootstrap:debootstrap dpkg-shlibdeps:dpkg-dev lintian:lintian strip:binutils readelf:binutils unshare:util-linux \
         systemd-analyze:systemd man:man-db; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

W=$(mktemp -d /tmp/clicker-package.XXXXXX)
R=$W/root
cleanup() {
  local rc=$?
  # Nothing stays mounted under the root (unshare's mounts end with its namespace; this is for safety).
  awk -v d="$R/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf "$W"
  exit $rc
}
trap cleanup EXIT

step "packages, revisions 1 and 2"
if [ -z "$BIN_DIR" ]; then
  for p in clicker-tally clicker-vote; do "$ROOT/scripts/release-build.sh" --package-path "$ROOT" --product $p >&2; done
  BIN_DIR=$("$ROOT/scripts/release-build.sh" --package-path "$ROOT" --show-bin-path)
fi
for rev in 1 2; do
  "$ROOT/scripts/package-deb.sh" --bin-dir "$BIN_DIR" --out "$W/pkgs" --revision $rev --compression gzip
  # The man page tool the first build built: the second need not ask SwiftPM again.
  MANUAL_TOOL=${MANUAL_TOOL:-$(find "$ROOT/.build" -path '*/debug/generate-manual-tool' -type f -perm -u+x | head -1)}
  export MANUAL_TOOL
done

step "lintian"
# Every tag is either fixed or explained in packaging/debian/*.lintian-overrides.
if lintian --tag-display-limit 0 -I -E --pedantic --fail-on error,warning,info,pedantic "$W"/pkgs/*-1_*.deb 2>&1 \
     | grep -v '^running with root privileges'; then
  fail "lintian reports the tags above"
else
  ok "lintian (--pedantic) reports no tag the overrides do not explain"
fi

step "Depends: and glibc"
# libc6 (>= V) must cover every glibc version the binary needs, GLIBC_ABI_DT_RELR (2.36) included.
for p in clicker-tally clicker-vote; do
  deb=$(ls "$W"/pkgs/${p}_*-1_*.deb)
  dpkg-deb -x "$deb" "$W/dep-$p"
  versions=$(readelf -V "$W/dep-$p/usr/bin/$p" | sed -nE 's/.*Name: GLIBC_([0-9][0-9.]*).*/\1/p; s/.*Name: GLIBC_ABI_DT_RELR.*/2.36/p')
  need=$(printf '%s\n' $versions | sort -V | tail -1)
  have=$(dpkg-deb -f "$deb" Depends | sed -nE 's/(^|.*, )libc6 \(>= ([^)]*)\).*/\2/p')
  if [ -n "$have" ] && dpkg --compare-versions "$have" ge "$need"; then ok "$p: Depends libc6 (>= $have), the binary needs glibc $need"
  else fail "$p: Depends libc6 (>= ${have:-none}), the binary needs glibc $need"; fi
done

step "the packaged unit"
# As scripts/check-unit.sh checks the repository's unit: verify (its ExecStart= pointed at the packaged
# binary, its Documentation= man page found in the package) and the sandbox's exposure.
X=$W/extracted; mkdir -p "$X/unit"
dpkg-deb -x "$W"/pkgs/clicker-tally_*-1_*.deb "$X"
sed "s|^ExecStart=/usr/bin/clicker-tally|ExecStart=$X/usr/bin/clicker-tally|" "$X/usr/lib/systemd/system/clicker-tally.service" \
  > "$X/unit/clicker-tally.service"
if MANPATH=$X/usr/share/man systemd-analyze verify "$X/unit/clicker-tally.service"; then
  ok "systemd-analyze verify passes the packaged unit"
else fail "systemd-analyze verify of the packaged unit"; fi
exposure=$(systemd-analyze security --offline=true --root="$X" /usr/lib/systemd/system/clicker-tally.service 2>/dev/null \
           | sed -n 's/.*Overall exposure level for clicker-tally.service: \([0-9.]*\).*/\1/p')
if [ -n "$exposure" ] && awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }'; then
  ok "the packaged unit's exposure is $exposure (at most 2.0)"
else fail "the packaged unit's exposure is '${exposure:-unknown}'"; fi

step "clean Debian 12 root"
MIRROR=${MIRROR:-$({ grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}'
                     grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}'; true; } \
                   | grep -v -- '-security' | grep -E '/debian/?$' | head -n1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
CACHE=${PKG_CACHE:-/var/cache/clicker-package}
TARBALL=$CACHE/bookworm-minbase.tar
if [ ! -s "$TARBALL" ]; then
  mkdir -p "$CACHE/debs" "$W/boot"
  timeout 1200 debootstrap --variant=minbase --cache-dir="$CACHE/debs" bookworm "$W/boot" "$MIRROR" \
    > "$W/debootstrap.log" 2>&1 || { tail -30 "$W/debootstrap.log"; echo "FAIL: debootstrap"; exit 1; }
  tar -C "$W/boot" -cf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
  rm -rf "$W/boot"
fi
mkdir -p "$R"
tar -C "$R" -xf "$TARBALL"
cp /etc/resolv.conf "$R/etc/resolv.conf"
printf 'deb %s bookworm main\n' "$MIRROR" > "$R/etc/apt/sources.list"
mkdir -p "$R/pkgs" "$R/test"
cp "$W"/pkgs/*.deb "$R/pkgs/"
cp "$ROOT/Tests/package/inroot.sh" "$ROOT/Tests/package/systemctl-stub" "$R/test/"

step "install, run, upgrade, remove, purge in the root"
# PID 1 of new PID and mount namespaces: every process the test starts ends with it.
set +e
unshare --pid --mount --fork --kill-child --root="$R" --wd=/ /bin/sh /test/inroot.sh | tee "$W/inroot.log"
rc=${PIPESTATUS[0]}
set -e
passed=$(grep -c '^ok: ' "$W/inroot.log" || true); failed=$(grep -c '^FAIL: ' "$W/inroot.log" || true)
[ $rc = 0 ] || [ "$failed" -gt 0 ] || failed=1   # the root's script ended before its checks
step "done"
echo "package test: $((passed + host_passed)) passed, $((failed + host_failed)) failed"
[ $rc = 0 ] && [ $host_failed = 0 ]
