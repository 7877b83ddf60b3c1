#!/usr/bin/env python3
"""Writes libFuzzer seed corpora from the ```vector blocks of docs/PROTOCOL-VECTORS.md.
usage: seeds.py PROTOCOL-VECTORS.md OUTDIR  → OUTDIR/{advertisement,gatt,radio-input,text,beacon,dbus-wire}/
radio-input: HCI advertising-report events (first byte 0) and BlueZ D-Bus signals (first byte 1)
carrying the vector advertisements."""
import os, re, struct, sys

doc, out = sys.argv[1], sys.argv[2]
blocks = re.findall(r"```vector\n(.*?)```", open(doc).read(), re.S)
if not blocks:
    sys.exit(f"{doc} holds no ```vector blocks: the seed corpora would be empty")
adv, gatt, texts, beacon = [], [], [], []
for b in blocks:
    f = dict(l.split(": ", 1) for l in b.strip().split("\n"))
    if "advertisement" in f: adv.append(bytes.fromhex(f["advertisement"]))
    if "gatt" in f: gatt.append(bytes.fromhex(f["gatt"]))
    for k in ("join-code", "answer", "enrollment-code", "input"):
        if k in f: texts.append(f[k].encode())
    for k, v in f.items():   # beacon frames (§11.9): `frame`, `page-0`, …
        if k == "frame" or k.startswith("page-"): beacon.append(bytes.fromhex(v))
    if "device-key" in f: texts.append(b"clicker-device-key-v1 " + f["device-key"].encode())

def ad(payload):      # raw advertising data: flags + manufacturer data (company 0xFFFF)
    return bytes([2, 1, 6, len(payload) + 3, 0xFF, 0xFF, 0xFF]) + payload

ADDR = bytes([0x01, 0x00, 0x00, 0x01, 0xAA, 0xC0])   # C0:AA:01:00:00:01, least significant first

def hci_event(datas, extended=False, status=0):   # LE Meta: (Extended) Advertising Report, one report per data
    params = bytearray([0x0D if extended else 0x02, len(datas)])         # status: extended data status (bits 5-6)
    for d in datas:
        if extended:
            params += bytes([0x13 | status << 5, 0x00, 0x01]) + ADDR + bytes([1, 0, 0xFF, 0x7F, 0xC4, 0, 0, 0]) + bytes(6) + bytes([len(d)]) + d
        else:
            params += bytes([0x03, 0x01]) + ADDR + bytes([len(d)]) + d + bytes([0xC4])
    return bytes([0x04, 0x3E, len(params)]) + bytes(params)

# A D-Bus marshaller (little-endian), by the specification, for the signals BlueZ sends.
ALIGN = {"y": 1, "b": 4, "n": 2, "q": 2, "i": 4, "u": 4, "x": 8, "t": 8, "d": 8, "s": 4, "o": 4, "g": 1,
         "a": 4, "(": 8, "{": 8, "v": 1}
FMT = {"y": "B", "b": "I", "n": "h", "q": "H", "i": "i", "u": "I", "x": "q", "t": "Q", "d": "d"}

def one_type(sig, i=0):   # end index of the complete type starting at sig[i]
    c = sig[i]
    if c == "a": return one_type(sig, i + 1)
    if c in "({":
        close, j = {"(": ")", "{": "}"}[c], i + 1
        while sig[j] != close: j = one_type(sig, j)
        return j + 1
    return i + 1

def split(sig):
    out, i = [], 0
    while i < len(sig):
        j = one_type(sig, i); out.append(sig[i:j]); i = j
    return out

def pad(buf, n):
    while len(buf) % n: buf.append(0)

def put(buf, sig, v, e="<"):   # e: the byte order, struct's "<" or ">"
    c = sig[0]
    pad(buf, ALIGN[c])
    if c in FMT: buf += struct.pack(e + FMT[c], v)
    elif c in "so":
        b = v.encode(); buf += struct.pack(e + "I", len(b)) + b + b"\0"
    elif c == "g":
        b = v.encode(); buf += bytes([len(b)]) + b + b"\0"
    elif c == "v":
        put(buf, "g", v[0], e); put(buf, v[0], v[1], e)
    elif c in "({":
        for t, x in zip(split(sig[1:-1]), v): put(buf, t, x, e)
    elif c == "a":
        elem = sig[1:]
        at = len(buf); buf += b"\0\0\0\0"
        pad(buf, ALIGN[elem[0]])
        start = len(buf)
        for x in v: put(buf, elem, x, e)
        buf[at:at + 4] = struct.pack(e + "I", len(buf) - start)

def dbus_signal(path, interface, member, sig, args, serial=7, big=False):
    e = ">" if big else "<"
    body = bytearray()
    for t, x in zip(split(sig), args): put(body, t, x, e)
    fields = [(1, ("o", path)), (2, ("s", interface)), (3, ("s", member)), (8, ("g", sig)), (7, ("s", ":1.4"))]
    msg = bytearray()
    put(msg, "(yyyyuua(yv))", (ord("B" if big else "l"), 4, 0, 1, len(body), serial, fields), e)
    pad(msg, 8)
    return bytes(msg + body)

DEV = "/org/bluez/hci0/dev_C0_AA_01_00_00_01"
PROPS = "org.freedesktop.DBus.Properties"
def manufacturer(entries): return ("a{qv}", [(c, ("ay", d)) for c, d in entries])

radio = []
for p in adv:
    radio.append(b"\x00" + hci_event([ad(p)]))
    radio.append(b"\x00" + hci_event([ad(p), bytes([2, 1, 6, 5, 0xFF, 0x4C, 0x00, 2, 0x15])], extended=True))
    # The same data in two pieces, two event packets: "more to come", then "complete".
    whole = ad(p)
    radio.append(b"\x00" + hci_event([whole[:9]], extended=True, status=1) + hci_event([whole[9:]], extended=True))
    change = [("ManufacturerData", manufacturer([(0xFFFF, p)])), ("RSSI", ("n", -60))]
    radio.append(b"\x01" + dbus_signal(DEV, PROPS, "PropertiesChanged", "sa{sv}as", ["org.bluez.Device1", change, []]))
    radio.append(b"\x01" + dbus_signal(DEV, PROPS, "PropertiesChanged", "sa{sv}as",
                                      ["org.bluez.Device1", change + [("Name", ("s", "clicker"))], ["TxPower"]]))
    device = [("Address", ("s", "C0:AA:01:00:00:01")), ("AddressType", ("s", "random")), ("RSSI", ("n", -61)),
              ("ManufacturerData", manufacturer([(0x004C, b"\x02\x15"), (0xFFFF, p)]))]
    radio.append(b"\x01" + dbus_signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", "oa{sa{sv}}",
                                      [DEV, [("org.bluez.Device1", device), ("org.freedesktop.DBus.Properties", [])]]))
radio.append(b"\x01" + dbus_signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", "oas",
                                  [DEV, ["org.bluez.Device1"]]))

# dbus-wire: the D-Bus messages alone, and one in big-endian byte order
wire = [x[1:] for x in radio if x[0] == 1]
wire.append(dbus_signal(DEV, PROPS, "PropertiesChanged", "sa{sv}as", ["org.bluez.Device1", [("RSSI", ("n", -60))], []], big=True))

for name, items in (("advertisement", adv), ("gatt", gatt), ("radio-input", radio), ("text", texts), ("beacon", beacon),
                    ("dbus-wire", wire)):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for i, x in enumerate(items):
        open(os.path.join(d, f"seed-{i:03d}"), "wb").write(x)
    print(f"{name}: {len(items)} seeds")
