# btvirt.sh - the Debian 13 guest's btvirt, rebuilt with a fix; sourced by image.sh.
#
# Debian 13's btvirt (bluez-test-tools 5.82) aborts as soon as a scanning controller hears an
# extended advertisement of more than 31 bytes, which takes every virtual controller with it
# (btvirt/btdev-ext-adv-report.patch says where and why; upstream fixed it in bluez 5.84), and its
# main loop can call through a timer entry it has just freed, which kills it under the beacon's
# frequent advertising updates (btvirt/mainloop-removed-entries.patch). So the trixie image
# replaces /usr/bin/btvirt with one built from Debian's own 5.82 source (the version the guest has
# installed, fetched with `apt-get source`) plus those patches, with Debian's compiler and
# hardening flags. Only the virtual controller changes: bluetoothd, bluetoothctl, btmgmt and
# btmon stay Debian's 5.82.
#
# The build runs in a throw-away copy of the guest's root with the build tools installed, so the
# guest image gets nothing but the binary. The build's .deb files are kept in DEBCACHE/btvirt-build.

E2E_BTVIRT_PATCHES="$HERE/btvirt/btdev-ext-adv-report.patch $HERE/btvirt/mainloop-removed-entries.patch"

# e2e_build_btvirt ROOT WORK DEBCACHE MIRROR: builds btvirt for ROOT (a debootstrapped trixie
# root) in WORK, installs it as ROOT/usr/bin/btvirt, writes what it built to
# ROOT/etc/clicker-e2e-btvirt and prints that line (btvirt=<Debian version>+<patch names>).
e2e_build_btvirt() {
  local R=$1 work=$2 debcache=$3 mirror=$4 ver p
  local B="$work/btvirt-root" cache="$debcache/btvirt-build"
  ver=$(chroot "$R" dpkg-query -W -f '${source:Version}' bluez) || { echo "e2e: bluez is not installed" >&2; return 1; }
  e2e_umount_under "$B"; rm -rf "$B"; mkdir -p "$cache"
  cp -a "$R" "$B"
  mkdir -p "$B/build"
  for p in $E2E_BTVIRT_PATCHES; do cp "$p" "$B/build/"; done
  cp -L /etc/resolv.conf "$B/etc/resolv.conf"
  echo "deb $mirror $E2E_SUITE main" > "$B/etc/apt/sources.list"
  echo "deb-src $mirror $E2E_SUITE main" >> "$B/etc/apt/sources.list"
  cp "$cache"/*.deb "$B/var/cache/apt/archives/" 2>/dev/null || true
  echo "e2e: building btvirt from Debian's bluez $ver source with $(basename -a $E2E_BTVIRT_PATCHES | paste -sd' ')" >&2
  # Debian's dpkg-buildflags for amd64 in trixie, written out: dpkg-dev is not needed for one binary.
  if ! timeout 1200 chroot "$B" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin BLUEZ_VERSION="$ver" \
        /bin/bash -euo pipefail -c '
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends gcc make libc6-dev libglib2.0-dev libdbus-1-dev pkgconf patch xz-utils >/dev/null
    cd /build
    apt-get source -qq --download-only "bluez=$BLUEZ_VERSION"
    tar xf bluez_*.orig.tar.*; tar xf bluez_*.debian.tar.*
    cd bluez-*/
    mv ../debian .
    grep -vE "^\s*(#|$)" debian/patches/series | while read -r p _; do patch -s -p1 < "debian/patches/$p"; done
    for p in /build/*.patch; do patch -s -p1 < "$p"; done
    ./configure -q --enable-testing --disable-tools --disable-monitor --disable-udev --disable-cups \
      --disable-obex --disable-client --disable-manpages --disable-systemd --disable-datafiles \
      --with-dbusconfdir=/usr/share \
      CFLAGS="-g -O2 -fstack-protector-strong -fstack-clash-protection -fcf-protection -Wformat -Werror=format-security" \
      CPPFLAGS="-Wdate-time -D_FORTIFY_SOURCE=2" LDFLAGS="-Wl,-z,relro -Wl,-z,now"
    # The headers lib/bluetooth/*.h are generated (links); btvirt alone does not ask for them.
    h=$(printf "print-headers:\n\t@echo \$(local_headers)\n" | make -s -f Makefile -f - print-headers)
    make -s -j"$(nproc)" $h emulator/btvirt
    strip emulator/btvirt
    cp emulator/btvirt /build/btvirt
  ' > "$work/btvirt-build.log" 2>&1; then
    tail -30 "$work/btvirt-build.log" >&2
    echo "e2e: btvirt build FAILED (log: $work/btvirt-build.log)" >&2
    return 1
  fi
  cp -n "$B"/var/cache/apt/archives/*.deb "$cache/" 2>/dev/null || true
  install -m 0755 "$B/build/btvirt" "$R/usr/bin/btvirt"
  local what="btvirt=$ver+$(for p in $E2E_BTVIRT_PATCHES; do basename "$p" .patch; done | paste -sd+)"
  echo "$what" > "$R/etc/clicker-e2e-btvirt"
  e2e_umount_under "$B"; rm -rf "$B"
  echo "$what"
}
