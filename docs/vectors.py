#!/usr/bin/env python3
"""Independent reference implementation of docs/PROTOCOL.md, written from the spec (standard
library only). Prints the ```vector blocks of PROTOCOL.md §8; with --check, verifies that every
block in PROTOCOL.md matches what this implementation computes; with --room N, prints sealed ballots
of N voters for load generators. The Swift tests check the same
blocks against ClickerWire, so the document, this script and the Swift code cannot drift apart."""
import hashlib, hmac, re, sys

ALPHA = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
SALT = b"clicker-v1"
FACT = [5040, 720, 120, 24, 6, 2, 1, 1]

def hkdf(ikm, info, n=64):
    prk = hmac.new(SALT, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t; i += 1
    return out[:n]

def parse_join(code):
    vid, a, b = code.split("-")
    v = 0
    for ch in (a + b).upper():
        v = v << 5 | ALPHA.index(ch)
    return int(vid), (a + b).upper()

def poll_km(code):
    vid, sec = parse_join(code)
    return hkdf(sec.encode(), b"poll" + vid.to_bytes(2, "big"))

def roster_km(devkey, code):
    vid, sec = parse_join(code)
    return hkdf(devkey + sec.encode(), b"roster" + vid.to_bytes(2, "big"))

def voter_id(devkey, label, code):
    vid, sec = parse_join(code)
    return int.from_bytes(hmac.new(devkey, label + vid.to_bytes(2, "big") + sec.encode(), hashlib.sha256).digest()[:4], "big")

def b32(data):
    bits = "".join(f"{x:08b}" for x in data)
    bits += "0" * (-len(bits) % 5)
    return "".join(ALPHA[int(bits[i:i + 5], 2)] for i in range(0, len(bits), 5))

def enrollment(devkey):
    s = b32(devkey + hashlib.sha256(b"clicker-enroll" + devkey).digest()[:3])
    return "CE1-" + "-".join(s[i:i + 8] for i in range(0, len(s), 8))

def lehmer(order):
    full = list(order) + list(range(len(order), 8))
    return sum(sum(1 for j in range(i + 1, 8) if full[j] < full[i]) * FACT[i] for i in range(8))

def answer_bytes(text):
    t = text.strip()
    if t in ("true", "false"):
        return bytes([2, 0, 1 if t == "true" else 0])
    if ">" in t:
        c = lehmer([ord(x) - 65 for x in t.split(">")])
        return bytes([4, c >> 8, c & 255])
    if "+" in t:
        m = 0
        for x in t.split("+"):
            m |= 1 << (ord(x) - 65)
        return bytes([3, 0, m])
    return bytes([1, 0, ord(t) - 65])

def seal(km, mode, vid, q, voter, seq, ans):
    enc, mac = km[:32], km[32:]
    hdr = bytes([0xCB, 0x10 | mode]) + vid.to_bytes(2, "big") + bytes([q]) + voter.to_bytes(4, "big") + seq.to_bytes(2, "big")
    ks = hmac.new(enc, hdr, hashlib.sha256).digest()
    body = hdr + bytes(a ^ k for a, k in zip(ans, ks))
    tag = hmac.new(mac, body, hashlib.sha256).digest()
    return body + tag[:8], body + tag

DEV = bytes(range(0x20, 0x40))      # a fixed device key for the vectors
DEV2 = bytes.fromhex("9f" * 32)
CODE = "4821-K7QXM-3PF9A"

def ballot_vector(name, code, mode, q, seq, ans, devkey=DEV, voter=None):
    vid, _ = parse_join(code)
    if mode == 0:
        km = poll_km(code)
        if voter is None:
            voter = voter_id(devkey, b"anon-id", code)
    else:
        km = roster_km(devkey, code)
        voter = voter_id(devkey, b"roster-id", code)
    ab = answer_bytes(ans)
    adv, gatt = seal(km, mode, vid, q, voter, seq, ab)
    lines = [f"name: {name}", f"join-code: {code}", f"mode: {'anonymous' if mode == 0 else 'roster'}"]
    lines.append(f"device-key: {devkey.hex()}")
    lines += [f"question: {q}", f"voter-id: {voter:08x}", f"sequence: {seq}", f"answer: {ans}",
              f"answer-bytes: {ab.hex()}", f"key-material: {km.hex()}",
              f"advertisement: {adv.hex()}", f"gatt: {gatt.hex()}"]
    return lines, adv, gatt

def reject_vector(name, code, payload, expect, kind="advertisement"):
    return [f"name: {name}", f"join-code: {code}", f"{kind}: {payload.hex()}", f"expect: {expect}"]

def all_vectors():
    out = []
    v, adv, gatt = ballot_vector("anonymous-choice-B", CODE, 0, 1, 1, "B"); out.append(v)
    out.append(ballot_vector("anonymous-changed-to-D", CODE, 0, 1, 2, "D")[0])
    out.append(ballot_vector("anonymous-question-2-true", CODE, 0, 2, 3, "true")[0])
    out.append(ballot_vector("anonymous-multi-select", CODE, 0, 3, 4, "A+C+H")[0])
    out.append(ballot_vector("anonymous-ranking", CODE, 0, 4, 5, "C>A>B")[0])
    out.append(ballot_vector("other-poll-choice-A", "1234-00000-00001", 0, 1, 1, "A", devkey=DEV2)[0])
    rv, radv, _ = ballot_vector("roster-choice-C", CODE, 1, 1, 1, "C")
    rv.insert(4, f"enrollment-code: {enrollment(DEV)}")
    out.append(rv)
    # Rejections
    out.append(reject_vector("reject-not-ours", CODE, bytes([0x4C, 0x00, 0x02, 0x15]), "notOurs"))
    out.append(reject_vector("reject-unknown-version", CODE, bytes([0xCB, 0x20]) + adv[2:], "unknownVersion"))
    out.append(reject_vector("reject-unknown-mode", CODE, bytes([0xCB, 0x1F]) + adv[2:], "unknownMode"))
    out.append(reject_vector("reject-truncated", CODE, adv[:21], "truncated"))
    out.append(reject_vector("reject-trailing-bytes", CODE, adv + b"\x00", "trailingBytes"))
    out.append(reject_vector("reject-other-vote-id", "1234-K7QXM-3PF9A", adv, "otherVoteID"))
    out.append(reject_vector("reject-unknown-voter", CODE, radv, "unknownVoter"))
    bad = bytearray(adv); bad[21] ^= 1
    out.append(reject_vector("reject-bad-tag", CODE, bytes(bad), "badTag"))
    out.append(reject_vector("reject-wrong-secret", "4821-K7QXM-3PF9B", adv, "badTag"))
    flip = bytearray(adv); flip[5] ^= 0x80
    out.append(reject_vector("reject-voter-id-changed", CODE, bytes(flip), "badTag"))
    # Authentic but malformed answer (kind 0x09), sealed with the right key.
    km = poll_km(CODE)
    mal, _ = seal(km, 0, 4821, 1, 0x01020304, 1, bytes([9, 0, 0]))
    out.append(reject_vector("reject-malformed-answer", CODE, mal, "malformedAnswer"))
    gbad = bytearray(gatt); gbad[45] ^= 0x40
    out.append(reject_vector("reject-gatt-bad-tag", CODE, bytes(gbad), "badTag", kind="gatt"))
    out.append(reject_vector("reject-gatt-short-tag", CODE, adv, "truncated", kind="gatt"))
    return out

def render(vs):
    return "\n\n".join("```vector\n" + "\n".join(v) + "\n```" for v in vs) + "\n"

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        doc = open(sys.argv[2] if len(sys.argv) > 2 else "docs/PROTOCOL.md").read()
        found = re.findall(r"```vector\n(.*?)```", doc, re.S)
        want = ["\n".join(v) + "\n" for v in all_vectors()]
        if found != want:
            print("PROTOCOL.md vectors differ from the reference implementation", file=sys.stderr)
            sys.exit(1)
        print(f"{len(found)} vectors match")
    elif len(sys.argv) > 1 and sys.argv[1] == "--room":
        # A room of N anonymous voters for load generators: "ADDRESS ADVERTISEMENT-HEX" per line.
        # --room N [JOIN-CODE [QUESTION]]; voter i has device key sha256("room" || i) and answers A-D in turn.
        n = int(sys.argv[2])
        code = sys.argv[3] if len(sys.argv) > 3 else CODE
        q = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        vid, _ = parse_join(code)
        km = poll_km(code)
        for i in range(n):
            dev = hashlib.sha256(b"room" + i.to_bytes(4, "big")).digest()
            adv, _ = seal(km, 0, vid, q, voter_id(dev, b"anon-id", code), 1, answer_bytes("ABCD"[i % 4]))
            print(f"C0:00:00:{i >> 16 & 255:02X}:{i >> 8 & 255:02X}:{i & 255:02X} {adv.hex()}")
    else:
        sys.stdout.write(render(all_vectors()))
