#!/usr/bin/env python3
"""Writes libFuzzer seed corpora from the ```vector blocks of docs/PROTOCOL.md.
usage: seeds.py PROTOCOL.md OUTDIR  → OUTDIR/{advertisement,gatt,manufacturer-data}/"""
import os, re, struct, sys

doc, out = sys.argv[1], sys.argv[2]
blocks = re.findall(r"```vector\n(.*?)```", open(doc).read(), re.S)
adv, gatt, texts = [], [], []
for b in blocks:
    f = dict(l.split(": ", 1) for l in b.strip().split("\n"))
    if "advertisement" in f: adv.append(bytes.fromhex(f["advertisement"]))
    if "gatt" in f: gatt.append(bytes.fromhex(f["gatt"]))
    for k in ("join-code", "answer", "enrollment-code", "input"):
        if k in f: texts.append(f[k].encode())
    if "device-key" in f: texts.append(b"clicker-device-key-v1 " + f["device-key"].encode())

def ad(payload):      # raw advertising data: flags + manufacturer data (company 0xFFFF)
    return bytes([2, 1, 6, len(payload) + 3, 0xFF, 0xFF, 0xFF]) + payload

def dbus(entries, be):  # a{qv} with ay variants
    e = ">" if be else "<"
    body = bytearray(8)
    for company, data in entries:
        while len(body) % 8: body.append(0)
        body += struct.pack(e + "H", company) + b"\x02ay\x00"
        while len(body) % 4: body.append(0)
        body += struct.pack(e + "I", len(data)) + data
    body[0:4] = struct.pack(e + "I", len(body) - 8)
    return bytes(body)

md = []
for p in adv:
    md.append(b"\x00" + ad(p))
    md.append(b"\x01" + dbus([(0x004C, b"\x02\x15"), (0xFFFF, p)], False))
    md.append(b"\x02" + dbus([(0xFFFF, p)], True))
md += [b"\x03" + t for t in texts]
for name, items in (("advertisement", adv), ("gatt", gatt), ("manufacturer-data", md)):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for i, x in enumerate(items):
        open(os.path.join(d, f"seed-{i:03d}"), "wb").write(x)
    print(f"{name}: {len(items)} seeds")
