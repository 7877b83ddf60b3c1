#!/usr/bin/env python3
"""Writes the tally's trimmed ICU data (Sources/ICUData/README.md).

The static Foundation links ICU's whole data package, 34 MB, into the tally: the symbol
icudtNN_dat in the member icu_packaged_data.cpp.o of lib_FoundationICU.a. The tally opens 21 of its
4,855 items (scripts/check-icu.sh lists what it opens). This copies the package's header and the
items named in Sources/ICUData/items.txt into a new package of the same format (ICU's "CmnD" common
data: a header, a table of contents of name and data offsets sorted by name, then the items, each
aligned to 16 bytes), which Sources/ICUData/icudata.S links in under the same symbol.

  scripts/icu-data.py            writes Sources/ICUData/icudt<version>l.dat from this toolchain
"""
import os, shutil, struct, subprocess, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
swift = os.environ.get("SWIFT") or shutil.which("swift") or "/opt/swift/usr/bin/swift"
archive = os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "lib", "swift_static", "linux", "lib_FoundationICU.a")
member = subprocess.run(["ar", "p", archive, "icu_packaged_data.cpp.o"], capture_output=True, check=True).stdout

# The member holds one section of data, .rodata, and one symbol, icudtNN_dat, at its start (ELF64).
shoff, = struct.unpack_from("<Q", member, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", member, 0x3A)
def section(i):
    name, kind, flags, addr, offset, size = struct.unpack_from("<IIQQQQ", member, shoff + i * shentsize)
    return name, offset, size
names_offset = section(shstrndx)[1]
package = None
for i in range(shnum):
    name, offset, size = section(i)
    if member[names_offset + name:member.index(b"\0", names_offset + name)] == b".rodata":
        package = member[offset:offset + size]
if package is None:
    sys.exit("icu-data: no .rodata in icu_packaged_data.cpp.o")

header_size, = struct.unpack_from("<H", package, 0)
if package[12:16] != b"CmnD":
    sys.exit("icu-data: the package is not ICU common data (CmnD)")
toc = package[header_size:]
count, = struct.unpack_from("<I", toc, 0)
entries = [struct.unpack_from("<II", toc, 4 + 8 * i) for i in range(count)]
items = []
for i, (name_at, data_at) in enumerate(entries):
    end = entries[i + 1][1] if i + 1 < count else len(toc)
    items.append((toc[name_at:toc.index(b"\0", name_at)].decode(), toc[data_at:end]))
prefix = items[0][0].split("/")[0]            # icudt76l: the version and byte order
version = prefix[len("icudt"):-1]

wanted = [l.split("#")[0].strip() for l in open(os.path.join(root, "Sources/ICUData/items.txt"))]
wanted = {prefix + "/" + w for w in wanted if w}
kept = [(n, d) for n, d in items if n in wanted]
missing = wanted - {n for n, _ in kept}
if missing:
    sys.exit(f"icu-data: not in this toolchain's ICU data: {', '.join(sorted(missing))}")

def pad(b, to=16):
    return b + b"\0" * (-len(b) % to)
names = b"".join(n.encode() + b"\0" for n, _ in kept)
names_start = 4 + 8 * len(kept)
first_item = len(pad(package[:header_size] + b"\0" * (names_start + len(names)))) - header_size
offsets, name_at, data_at, body = [], names_start, first_item, b""
for n, d in kept:
    offsets.append((name_at, data_at))
    name_at += len(n) + 1
    body += pad(d)
    data_at += len(pad(d))
new_toc = struct.pack("<I", len(kept)) + b"".join(struct.pack("<II", *o) for o in offsets) + names
out = pad(package[:header_size] + new_toc) + body
path = os.path.join(root, f"Sources/ICUData/icudt{version}l.dat")
open(path, "wb").write(out)
os.utime(os.path.join(root, "Sources/ICUData/icudata.S"))   # the build does not track .incbin's file
print(f"icu-data: {len(kept)} of {count} items, {len(out):,} of {len(package):,} bytes -> {os.path.relpath(path, root)}")
