#!/usr/bin/env bash
# Builds the Debian packages clicker-tally and clicker-vote from the release build:
#   scripts/package-deb.sh [--bin-dir DIR] [--out DIR] [--revision N]
#   --bin-dir DIR   the release binaries (default: builds them with scripts/release-build.sh)
#   --out DIR       where the .deb files go (default: .build/deb)
#   --revision N    the Debian revision (default 1): version = the binaries' release (--version), -N
#   --compression   xz (default, what is published) or gzip (the tests: 3 s of CPU instead of 45 s for
#                   the tally's package, which is 40 % larger)
# clicker-tally: the tally, the unit, the D-Bus policy, the sysusers.d file (postinst creates the
# accounts with adduser), man pages, completions, the guide and the unit's drop-ins as examples.
# clicker-vote: the voter, its man pages and completions. Both under /usr (the unit's and drop-ins'
# /usr/local/bin become /usr/bin). The binaries link the Swift runtime statically, so the packages
# need no Swift; Depends: comes from dpkg-shlibdeps. Man pages: swift-argument-parser's generate-manual
# tool (built once, in debug, with `swift package generate-manual --help`) run on the release binaries.
# Needs dpkg-dev (dpkg-shlibdeps), binutils (strip) and Swift (the man page tool). The maintainer
# scripts, copyright and lintian overrides are in packaging/debian/; docs/GUIDE.md, "Debian packages".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN_DIR=""; OUT=.build/deb; REVISION=1; COMPRESSION=xz
while [ $# -gt 0 ]; do
  case $1 in
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --revision) REVISION=$2; shift 2 ;;
    --compression) COMPRESSION=$2; shift 2 ;;
    *) echo "usage: $0 [--bin-dir DIR] [--out DIR] [--revision N] [--compression xz|gzip]" >&2; exit 2 ;;
  esac
done
case $COMPRESSION in xz|gzip) ;; *) echo "package-deb: --compression xz or gzip" >&2; exit 2 ;; esac
case $REVISION in ''|*[!0-9a-z.+~]*) echo "package-deb: bad revision '$REVISION'" >&2; exit 2 ;; esac
for tool in dpkg-deb dpkg-shlibdeps strip readelf gzip; do
  command -v $tool >/dev/null || { echo "package-deb: $tool is missing (apt-get install dpkg-dev binutils)" >&2; exit 1; }
done
SWIFT=${SWIFT:-$(command -v swift || echo /opt/swift/usr/bin/swift)}
if [ -z "$BIN_DIR" ]; then
  for p in clicker-tally clicker-vote; do SWIFT=$SWIFT scripts/release-build.sh --product $p >&2; done
  BIN_DIR=$(SWIFT=$SWIFT scripts/release-build.sh --show-bin-path)
fi
for b in clicker-tally clicker-vote; do
  [ -x "$BIN_DIR/$b" ] || { echo "package-deb: $BIN_DIR/$b is missing" >&2; exit 1; }
done

# The version: what the binaries report (clicker-tally 0.2.0 (ballot protocol 2)); both must agree.
UPSTREAM=$("$BIN_DIR/clicker-tally" --version | awk '{ print $2 }')
VOTE_UPSTREAM=$("$BIN_DIR/clicker-vote" --version | awk '{ print $2 }')
if [ "$UPSTREAM" != "$VOTE_UPSTREAM" ] || ! [[ $UPSTREAM =~ ^[0-9][0-9A-Za-z.+~]*$ ]]; then
  echo "package-deb: the binaries report releases '$UPSTREAM' and '$VOTE_UPSTREAM'" >&2; exit 1
fi
VERSION=$UPSTREAM-$REVISION
ARCH=$(dpkg --print-architecture)
# Reproducible dates: the commit's, else now.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
MAINTAINER=${DEB_MAINTAINER:-"Clicker maintainers <maintainers@users.noreply.a-seed-47f4638f.example>"}

# The man page generator: swift-argument-parser's generate-manual, built by its plugin's --help.
MANUAL_TOOL=${MANUAL_TOOL:-}
if [ -z "$MANUAL_TOOL" ]; then
  "$SWIFT" package generate-manual --help >/dev/null
  MANUAL_TOOL=$(find .build -path '*/debug/generate-manual-tool' -type f -perm -u+x | head -1)
  [ -n "$MANUAL_TOOL" ] || { echo "package-deb: generate-manual-tool was not built" >&2; exit 1; }
fi

umask 022
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
MAN_DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
CHANGE_DATE=$(date -u -R -d "@$SOURCE_DATE_EPOCH")

# Files both packages have: the binary, man pages, completions, copyright and changelogs.
common() {
  local pkg=$1; local R=$W/$pkg
  install -D -m 0755 "$BIN_DIR/$pkg" "$R/usr/bin/$pkg"
  # As dh_strip: no symbols, no .comment; the GNU build ID stays, so the unstripped binary of the same
  # build names a backtrace's addresses (scripts/install.sh).
  strip --strip-all --remove-section=.comment "$R/usr/bin/$pkg"
  # One page with every subcommand. The discussion text keeps --help's layout: its blank lines become
  # paragraph breaks and its indented option tables literal blocks (mdoc allows no empty lines).
  local man=$W/man-$pkg; mkdir -p "$man"
  "$MANUAL_TOOL" "$BIN_DIR/$pkg" --date "$MAN_DATE" --output-directory "$man" >/dev/null
  install -d "$R/usr/share/man/man1"
  awk '/^$/ { if (lit) { print ".Ed"; lit = 0 } print ".Pp"; next }
       /^  / { if (!lit) { print ".Bd -literal"; lit = 1 } print; next }
       { if (lit) { print ".Ed"; lit = 0 } print }
       END { if (lit) print ".Ed" }' "$man/$pkg.1" | gzip -9n > "$R/usr/share/man/man1/$pkg.1.gz"
  install -d "$R/usr/share/bash-completion/completions" "$R/usr/share/zsh/vendor-completions" \
    "$R/usr/share/fish/vendor_completions.d"
  # bash-completion sources the file: no #! line.
  "$BIN_DIR/$pkg" --generate-completion-script bash | sed '1{/^#!/d}' > "$R/usr/share/bash-completion/completions/$pkg"
  "$BIN_DIR/$pkg" --generate-completion-script zsh > "$R/usr/share/zsh/vendor-completions/_$pkg"
  "$BIN_DIR/$pkg" --generate-completion-script fish > "$R/usr/share/fish/vendor_completions.d/$pkg.fish"
  local doc=$R/usr/share/doc/$pkg
  install -D -m 0644 packaging/debian/copyright "$doc/copyright"
  gzip -9n < CHANGELOG.md > "$doc/changelog.gz"
  printf '%s (%s) unstable; urgency=medium\n\n  * Release %s, packaged from the release build (scripts/package-deb.sh).\n\n -- %s  %s\n' \
    "$pkg" "$VERSION" "$UPSTREAM" "$MAINTAINER" "$CHANGE_DATE" | gzip -9n > "$doc/changelog.Debian.gz"
  install -D -m 0644 "packaging/debian/$pkg.lintian-overrides" "$R/usr/share/lintian/overrides/$pkg"
}

# Depends: from the libraries the binary links (dpkg-shlibdeps wants a debian/control to read). A binary
# with packed relative relocations (Package.swift links them where glibc has them) needs the version
# GLIBC_ABI_DT_RELR, glibc 2.36, which Debian 12's libc6 symbols file does not map: dpkg-shlibdeps
# would say libc6 (>= 2.35), and on glibc 2.35 the binary would not load.
shlibs() {
  local pkg=$1; local d=$W/shlibs-$pkg deps
  mkdir -p "$d/debian"
  printf 'Source: clicker\n\nPackage: %s\nArchitecture: any\n' "$pkg" > "$d/debian/control"
  deps=$( (cd "$d" && dpkg-shlibdeps -O "$W/$pkg/usr/bin/$pkg" 2>"$d/log") | sed -n 's/^shlibs:Depends=//p') \
    || { cat "$d/log" >&2; return 1; }
  if readelf -V "$W/$pkg/usr/bin/$pkg" | grep -q 'Name: GLIBC_ABI_DT_RELR'; then
    local libc
    libc=$(sed -nE 's/(^|.*, )libc6 \(>= ([^)]*)\).*/\2/p' <<<"$deps")
    if [ -z "$libc" ] || dpkg --compare-versions "$libc" lt 2.36; then
      deps=$(sed -E 's/libc6( \(>= [^)]*\))?/libc6 (>= 2.36)/' <<<"$deps")
    fi
  fi
  echo "$deps"
}

# DEBIAN/control, md5sums and maintainer scripts, then the archive.
finish() {
  local pkg=$1 depends=$2 recommends=$3 description=$4; local R=$W/$pkg
  install -d "$R/DEBIAN"
  for s in postinst prerm postrm; do
    if [ -f "packaging/debian/$pkg.$s" ]; then install -m 0755 "packaging/debian/$pkg.$s" "$R/DEBIAN/$s"; fi
  done
  (cd "$R" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$R/DEBIAN/md5sums"
  local size
  size=$(du -sk --apparent-size --exclude=DEBIAN "$R" | cut -f1)
  {
    echo "Package: $pkg"
    echo "Version: $VERSION"
    echo "Architecture: $ARCH"
    echo "Maintainer: $MAINTAINER"
    echo "Installed-Size: $size"
    echo "Depends: $depends"
    if [ -n "$recommends" ]; then echo "Recommends: $recommends"; fi
    echo "Section: misc"
    echo "Priority: optional"
    printf '%s\n' "$description"
  } > "$R/DEBIAN/control"
  find "$R" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Z"$COMPRESSION" --build "$R" "$OUT/${pkg}_${VERSION}_${ARCH}.deb" >/dev/null
  echo "$OUT/${pkg}_${VERSION}_${ARCH}.deb: $(stat -c %s "$OUT/${pkg}_${VERSION}_${ARCH}.deb") bytes, installed $size KiB"
}

# clicker-tally
common clicker-tally
R=$W/clicker-tally
sed -e 's|/usr/local/bin/|/usr/bin/|g' \
    -e 's|^Documentation=.*|Documentation=man:clicker-tally(1) file:///usr/share/doc/clicker-tally/GUIDE.md.gz|' \
    -e '/^# Install: /{N;s|.*|# Installed by the Debian package clicker-tally (scripts/package-deb.sh).|}' \
    systemd/clicker-tally.service > "$W/unit"
grep -q '^ExecStart=/usr/bin/clicker-tally daemon --resume-open$' "$W/unit" || { echo "package-deb: the unit's ExecStart= was not rewritten" >&2; exit 1; }
install -D -m 0644 "$W/unit" "$R/usr/lib/systemd/system/clicker-tally.service"
install -D -m 0644 systemd/clicker-tally.sysusers.conf "$R/usr/lib/sysusers.d/clicker-tally.conf"
install -D -m 0644 dbus-policy/org.clicker.Tally1.conf "$R/usr/share/dbus-1/system.d/org.clicker.Tally1.conf"
gzip -9n < docs/GUIDE.md > "$R/usr/share/doc/clicker-tally/GUIDE.md.gz"
gzip -9n < README.md > "$R/usr/share/doc/clicker-tally/README.md.gz"
for d in web questions; do
  sed 's|/usr/local/bin/|/usr/bin/|g' "systemd/clicker-tally-$d.conf" > "$W/$d.conf"
  install -D -m 0644 "$W/$d.conf" "$R/usr/share/doc/clicker-tally/examples/clicker-tally-$d.conf"
done
# libpq5: the ledger's client library, which the tally loads when a command uses the ledger (dlopen,
# so dpkg-shlibdeps does not see it).
finish clicker-tally "adduser, libpq5, $(shlibs clicker-tally)" "bluez, default-dbus-system-bus | dbus-system-bus" \
"Description: classroom clicker over Bluetooth LE: the instructor's tally
 clicker-tally counts the votes students send from clicker-vote as Bluetooth
 LE advertisements, through BlueZ: in a terminal (a poll with a live view), or
 as a system service (clicker-tally.service) that instructors in the group
 'clicker' control over D-Bus, with a projector page, question sets, rosters
 and exports. Polls are kept in an SQLite database in /var/lib/clicker."

# clicker-vote
common clicker-vote
gzip -9n < README.md > "$W/clicker-vote/usr/share/doc/clicker-vote/README.md.gz"
finish clicker-vote "$(shlibs clicker-vote)" "bluez" \
"Description: classroom clicker over Bluetooth LE: the student's voter
 clicker-vote sends a student's answer to the instructor's clicker-tally as a
 signed Bluetooth LE advertisement, through BlueZ: it follows the tally's
 beacon to show the open question, and says when the vote was counted. On a
 laptop or a single-board computer."
