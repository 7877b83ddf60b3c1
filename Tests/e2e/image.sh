# image.sh - the guest image recipe, sourced by run.sh.
#
# The guest is Debian bookworm (bluez 5.66, kernel 6.1), or with E2E_GUEST=trixie Debian 13
# (bluez 5.82, kernel 6.12): Debian's own kernel (linux-image-amd64; bluetooth,
# hci_vhci and 9p are modules) plus a `debootstrap --variant=minbase` root with
# dbus, bluez (bluetoothd, bluetoothctl, btmon, btmgmt), bluez-test-tools (btvirt),
# python3-dbus and the system libraries our binaries (static Swift stdlib) link against:
# libdbus-1-3, libbluetooth3, libsqlite3-0 (GRDB), libstdc++6 (swift-crypto), libpq5 (the ballot ledger). Root and modules are packed as one uncompressed
# initramfs, so there is no disk image and no guest initrd tooling.
#
# The trixie image replaces Debian's btvirt with one built from Debian's 5.82 source plus a fix
# for extended advertisements over 31 bytes (btvirt.sh, btvirt/*.patch); bluetoothd stays Debian's.
#
# The cache directory is keyed by a hash of this file, btvirt.sh and btvirt/*.patch: change the
# recipe or the package list and the next run builds a fresh image.
#
# Needs: root, a Debian 12 host with apt sources, debootstrap, cpio, dpkg, apt.

. "$HERE/btvirt.sh"

E2E_SUITE=${E2E_GUEST:-bookworm}
case $E2E_SUITE in bookworm|trixie) ;; *) echo "e2e: E2E_GUEST must be bookworm or trixie" >&2; return 2 ;; esac
E2E_PKGS=dbus,bluez,bluez-test-tools,python3-dbus,python3-gi,libdbus-1-3,libbluetooth3,libsqlite3-0,libstdc++6,libpq5,kmod,procps
# Both guests also run a PostgreSQL server for the ballot ledger's scenario (ledger-receiver), each
# its release's, without its JIT: the cluster the package makes, LLVM and the Z3 solver it links
# (about 130 MB of the initramfs) and the locale sources are removed. The Debian 12 image grows from
# 155 to about 265 MB.
case $E2E_SUITE in bookworm) E2E_PKGS=$E2E_PKGS,postgresql-15 ;; trixie) E2E_PKGS=$E2E_PKGS,postgresql-17 ;; esac
E2E_MODDIRS="crypto arch/x86/crypto lib net/bluetooth drivers/bluetooth net/rfkill net/9p fs/9p fs/netfs fs/fscache drivers/virtio drivers/char/hw_random"

# The Debian mirror: the first "URIs:" (deb822) or "deb" line of the host's apt sources.
e2e_host_mirror() {
  { grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}'
    grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}'
    true
  } | grep -v -- '-security' | grep -E '/debian/?$' | head -n1 || true
}

# Unmounts whatever a failed debootstrap left mounted under DIR (proc, sys), so that
# removing DIR never reaches into the host's /proc or /sys.
e2e_umount_under() {
  local m
  awk -v d="$(realpath -m "$1")/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | \
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

# e2e_build_image DIR DEBCACHE: writes DIR/vmlinuz, DIR/base.cpio, DIR/kernel-version,
# DIR/packages (name=version of every guest package) and finally DIR/.complete.
e2e_build_image() {
  local dir=$1 debcache=$2 mirror=${MIRROR:-$(e2e_host_mirror)}
  [ -n "$mirror" ] || { echo "e2e: no Debian mirror in the host's apt sources; set MIRROR" >&2; return 2; }
  local tmp="$dir.tmp"
  e2e_umount_under "$tmp"; rm -rf "$tmp"; mkdir -p "$tmp" "$debcache"
  local R="$tmp/rootfs"

  echo "e2e: debootstrap $E2E_SUITE from $mirror ($E2E_PKGS)"
  if ! timeout 1200 debootstrap --variant=minbase --cache-dir="$debcache" \
        --include="$E2E_PKGS" "$E2E_SUITE" "$R" "$mirror" > "$tmp/debootstrap.log" 2>&1; then
    e2e_umount_under "$tmp"
    tail -30 "$tmp/debootstrap.log" >&2
    echo "e2e: debootstrap FAILED (log: $tmp/debootstrap.log)" >&2
    return 1
  fi
  chroot "$R" dpkg-query -W -f '${Package}=${Version}\n' > "$tmp/packages"
  if [ "$E2E_SUITE" = trixie ]; then
    local t0=$SECONDS
    e2e_build_btvirt "$R" "$tmp" "$debcache" "$mirror" >> "$tmp/packages" || return 1
    echo "e2e: btvirt built in $((SECONDS - t0)) s"
  fi
  rm -rf "$R"/var/lib/postgresql/*/main "$R"/etc/postgresql/*/main "$R"/usr/lib/postgresql/*/lib/bitcode \
         "$R"/usr/lib/postgresql/*/lib/llvmjit*.so "$R"/usr/lib/x86_64-linux-gnu/libLLVM-*.so* "$R"/usr/lib/x86_64-linux-gnu/libLLVM.so* \
         "$R"/usr/lib/x86_64-linux-gnu/libz3.so* "$R"/usr/share/i18n
  rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/cache/apt/*.bin "$R"/var/lib/apt/lists/* \
         "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/locale/* "$R"/usr/share/info/* \
         "$R"/usr/lib/udev/hwdb.d "$R"/usr/lib/udev/hwdb.bin

  # Debian's kernel of the guest's release, resolved and fetched with apt lists of that release alone
  # (a private list directory: the host's own apt state is not touched, and may be of another release).
  local kpkg apt="$tmp/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$tmp/debs" "$tmp/k"
  echo "deb $mirror $E2E_SUITE main" > "$apt/sources.list"
  local aopt=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
              -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root)
  timeout 300 apt-get "${aopt[@]}" update -qq || { echo "e2e: apt-get update for $E2E_SUITE FAILED" >&2; return 1; }
  kpkg=$(apt-cache "${aopt[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$kpkg" ] || { echo "e2e: cannot resolve linux-image-amd64 of $E2E_SUITE" >&2; return 1; }
  echo "e2e: fetching $kpkg"
  (cd "$tmp/debs" && timeout 900 apt-get "${aopt[@]}" download -qq "$kpkg") \
    || { echo "e2e: apt-get download $kpkg FAILED" >&2; return 1; }
  dpkg -x "$tmp"/debs/"$kpkg"_*.deb "$tmp/k"
  cp "$tmp"/k/boot/vmlinuz-* "$tmp/vmlinuz"
  # Modules are under /lib/modules (bookworm) or /usr/lib/modules (trixie, merged /usr).
  local kmods="$tmp/k/lib/modules"; [ -d "$kmods" ] || kmods="$tmp/k/usr/lib/modules"
  local kv; kv=$(ls "$kmods" 2>/dev/null)
  [ -n "$kv" ] || { echo "e2e: no modules in $kpkg" >&2; return 1; }
  echo "$kv" > "$tmp/kernel-version"
  echo "$kpkg" >> "$tmp/packages"
  # Only the modules the guest needs: bluetooth, vhci, crypto, 9p, virtio.
  local S="$kmods/$kv" D="$R/lib/modules/$kv" d
  rm -rf "$R"/lib/modules/*; mkdir -p "$D"
  cp "$S"/modules.builtin "$S"/modules.builtin.modinfo "$S"/modules.order "$D"/
  for d in $E2E_MODDIRS; do   # a directory this kernel does not have (built in, or moved) is skipped
    [ -d "$S/kernel/$d" ] || continue
    mkdir -p "$D/kernel/$d"; cp -a "$S/kernel/$d/." "$D/kernel/$d/"
  done
  chroot "$R" depmod "$kv" || { echo "e2e: depmod $kv FAILED" >&2; return 1; }
  rm -rf "$tmp/k" "$tmp/debs" "$apt"

  (cd "$R" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) > "$tmp/base.cpio"
  e2e_umount_under "$tmp"; rm -rf "$R"
  touch "$tmp/.complete"
  rm -rf "$dir"; mv "$tmp" "$dir"
}
