#!/usr/bin/env python3
"""Independent reference implementation of docs/PROTOCOL.md (version 4), written from the spec with
the Python standard library only (hashlib.scrypt, hmac, and the small RFC 8032 Ed25519 below).

  vectors.py                 prints the ```vector blocks of PROTOCOL-VECTORS.md, part A (ballots, §9)
                             and part B (beacon, §11.9)
  vectors.py --beacon        prints only the beacon blocks (part B)
  vectors.py --check [DOC]   recomputes every block of DOC (default docs/PROTOCOL-VECTORS.md) and checks that
                             docs/vectors.json is exactly what --write-json makes of DOC
  vectors.py --write-json [DOC]  writes docs/vectors.json (the conformance kit) from DOC's blocks
  vectors.py --room N [JOIN-CODE [QUESTION]]  sealed ballots of N anonymous voters for load
                             generators: "ADDRESS ADVERTISEMENT-HEX" per line

The Swift tests check the same blocks and the JSON against ClickerWire, so the document, this
script, the JSON file and the Swift code cannot drift apart."""
import hashlib, hmac, json, os, re, sys

ALPHA = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
LOOKALIKE = {"O": "0", "I": "1", "L": "1"}
SALT = b"clicker-v2"

# ---------------------------------------------------------------- Ed25519 (RFC 8032, §5.1)
P = 2 ** 255 - 19
Q = 2 ** 252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
I2 = pow(2, (P - 1) // 4, P)

def _xrecover(y, sign):
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P:
        x = x * I2 % P
    if (x * x - x2) % P:
        return None
    if x & 1 != sign:
        x = P - x
    return x

_GY = 4 * pow(5, P - 2, P) % P
_G = (_xrecover(_GY, 0), _GY, 1, _xrecover(_GY, 0) * _GY % P)

def _add(a, b):
    x1, y1, z1, t1 = a; x2, y2, z2, t2 = b
    A = (y1 - x1) * (y2 - x2) % P; B = (y1 + x1) * (y2 + x2) % P
    C = 2 * t1 * t2 * D % P; Dd = 2 * z1 * z2 % P
    E, F, G, H = B - A, Dd - C, Dd + C, B + A
    return (E * F % P, G * H % P, F * G % P, E * H % P)

def _mul(s, p):
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q

def _encode(p):
    x, y, z, _ = p
    zi = pow(z, P - 2, P)
    x, y = x * zi % P, y * zi % P
    return (y | (x & 1) << 255).to_bytes(32, "little")

def _decode(b):
    if len(b) != 32:
        return None
    v = int.from_bytes(b, "little")
    y, sign = v & ((1 << 255) - 1), v >> 255
    if y >= P:
        return None
    x = _xrecover(y, sign)
    if x is None or (x == 0 and sign):
        return None
    return (x, y, 1, x * y % P)

def _h(m):
    return int.from_bytes(hashlib.sha512(m).digest(), "little")

def _expand(seed):
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    return a, h[32:]

def ed25519_public(seed):
    return _encode(_mul(_expand(seed)[0], _G))

def ed25519_sign(seed, msg):
    a, prefix = _expand(seed)
    pk = _encode(_mul(a, _G))
    r = _h(prefix + msg) % Q
    R = _encode(_mul(r, _G))
    s = (r + _h(R + pk + msg) * a) % Q
    return R + s.to_bytes(32, "little")

def ed25519_verify(pk, msg, sig):
    A, R = _decode(pk), _decode(sig[:32]) if len(sig) == 64 else None
    if A is None or R is None:
        return False
    s = int.from_bytes(sig[32:], "little")
    if s >= Q:
        return False
    k = _h(sig[:32] + pk + msg) % Q
    return _encode(_mul(s, _G)) == _encode(_add(R, _mul(k, A)))

# ---------------------------------------------------------------- keys (§2, §3, §5)
def hkdf(ikm, info, n=64):
    prk = hmac.new(SALT, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t; i += 1
    return out[:n]

def mac(key, msg):
    return hmac.new(key, msg, hashlib.sha256).digest()

def be16(v):
    return v.to_bytes(2, "big")

def parse_join(code):
    """(vote ID, canonical secret text) of a join code; look-alikes O/I/L read as 0/1/1."""
    vid, a, b = code.strip().split("-")
    text = "".join(LOOKALIKE.get(c, c) for c in (a + b).upper())
    assert len(a) == len(b) == 5 and all(c in ALPHA for c in text) and 0 < int(vid) < 65536
    return int(vid), text

def canonical_join(code):
    vid, text = parse_join(code)
    return f"{vid}-{text[:5]}-{text[5:]}"

_SECRETS = {}
def poll_secret(code):
    vid, text = parse_join(code)
    if (vid, text) not in _SECRETS:
        _SECRETS[(vid, text)] = hashlib.scrypt(text.encode("ascii"), salt=SALT + be16(vid), n=32768, r=8, p=1,
                                               maxmem=64 * 1024 * 1024, dklen=32)
    return _SECRETS[(vid, text)]

def roster_key(dev):
    return mac(dev, b"clicker-v2 roster-key")

def anon_key(dev):
    return mac(dev, b"clicker-v2 anon-key")

def poll_km(code):
    vid, _ = parse_join(code)
    return hkdf(poll_secret(code), b"poll" + be16(vid))

def roster_km(rkey, code):
    vid, _ = parse_join(code)
    return hkdf(rkey + poll_secret(code), b"roster" + be16(vid))

def roster_voter_id(rkey, code):
    vid, _ = parse_join(code)
    return int.from_bytes(mac(rkey, b"roster-id" + be16(vid) + poll_secret(code))[:4], "big")

def signing_seed(dev, mode, code):
    vid, _ = parse_join(code)
    return mac(anon_key(dev), b"sign" + bytes([mode]) + be16(vid) + poll_secret(code))

def anon_voter_id(pk):
    return int.from_bytes(hashlib.sha256(b"clicker-v2 voter-id" + pk).digest()[:4], "big")

def b32(data):
    bits = "".join(f"{x:08b}" for x in data)
    bits += "0" * (-len(bits) % 5)
    return "".join(ALPHA[int(bits[i:i + 5], 2)] for i in range(0, len(bits), 5))

def enrollment(rkey):
    s = b32(rkey + hashlib.sha256(b"clicker-enroll" + rkey).digest()[:3])
    return "CE2-" + "-".join(s[i:i + 8] for i in range(0, len(s), 8))

def parse_enrollment(text):
    """The roster key of an enrollment code, or the reason it is refused."""
    t = "".join(c for c in text.strip().upper() if c not in "- ")
    if t.startswith("CE1"):
        return "versionOne"
    if not t.startswith("CE2"):
        return "notAnEnrollmentCode"
    body = "".join(LOOKALIKE.get(c, c) for c in t[3:])
    if len(body) != 56 or any(c not in ALPHA for c in body):
        return "badCode"
    v = 0
    for c in body:
        v = v << 5 | ALPHA.index(c)
    raw = v.to_bytes(35, "big")          # 56 characters are exactly 280 bits: no padding
    if hashlib.sha256(b"clicker-enroll" + raw[:32]).digest()[:3] != raw[32:]:
        return "checksumMismatch"
    return raw[:32]

# ---------------------------------------------------------------- answers (§4)
def arrangements(k):
    n = 1
    for i in range(k):
        n *= 8 - i
    return n

def answer_bytes(text):
    t = text.strip()
    if t in ("true", "false"):
        return bytes([2, 0, 1 if t == "true" else 0])
    if re.fullmatch(r"-?[0-9]+", t):
        return bytes([5]) + (int(t) & 0xFFFF).to_bytes(2, "big")
    if ">" in t:
        order = [ord(x) - 65 for x in t.rstrip(">").split(">")]
        rest, code = list(range(8)), 0
        for i, o in enumerate(order):
            code = code * (8 - i) + rest.index(o)
            rest.remove(o)
        return bytes([0x40 + len(order)]) + code.to_bytes(2, "big")
    if "+" in t:
        m = 0
        for x in t.rstrip("+").split("+"):
            m |= 1 << (ord(x) - 65)
        return bytes([3, 0, m])
    return bytes([1, 0, ord(t) - 65])

def answer_text(b):
    """The printed form of 3 plaintext bytes, or None when they are malformed."""
    k, v = b[0], b[1] << 8 | b[2]
    if k == 1 and v < 8:
        return chr(65 + v)
    if k == 2 and v < 2:
        return "true" if v else "false"
    if k == 3 and 0 < v < 256:
        letters = [chr(65 + i) for i in range(8) if v >> i & 1]
        return letters[0] + "+" if len(letters) == 1 else "+".join(letters)
    if k == 5:
        return str(v - 65536 if v >= 32768 else v)
    if 0x41 <= k <= 0x48 and v < arrangements(k - 0x40):
        n, digits = k - 0x40, []
        for i in reversed(range(n)):
            digits.insert(0, v % (8 - i)); v //= 8 - i
        rest = list(range(8))
        order = [chr(65 + rest.pop(d)) for d in digits]
        return order[0] + ">" if n == 1 else ">".join(order)
    return None

# ---------------------------------------------------------------- ballots (§1, §6, §7)
CONTEXT = b"clicker-v2 ballot"

def seal(km, mode, vid, q, voter, seq, ans):
    """(22-byte advertisement, 46-byte full ballot); synthetic IV."""
    enc, tkey = km[:32], km[32:]
    hdr = bytes([0xCB, 0x20 | mode]) + be16(vid) + bytes([q]) + voter.to_bytes(4, "big") + be16(seq)
    tag = mac(tkey, hdr + ans)
    ks = mac(enc, hdr + tag[:8])
    full = hdr + bytes(a ^ k for a, k in zip(ans, ks)) + tag
    return full[:22], full

def sign_gatt(full, seed):
    return full + ed25519_public(seed) + ed25519_sign(seed, CONTEXT + full)

def decode(payload, code, roster=(), gatt=False):
    """Decodes like the tally (§8): ('ok', answer text) or ('reject', reason)."""
    vid, _ = parse_join(code)
    n = 142 if gatt else 22
    p = payload
    if len(p) < 1 or p[0] != 0xCB: return "notOurs"
    if len(p) < 2: return "truncated"
    if p[1] >> 4 != 2: return "unknownVersion"
    mode = p[1] & 15
    if mode not in (0, 1): return "unknownMode"
    if len(p) < n: return "truncated"
    if len(p) > n: return "trailingBytes"
    if int.from_bytes(p[2:4], "big") != vid: return "otherVoteID"
    if int.from_bytes(p[9:11], "big") == 0: return "badSequence"
    voter = int.from_bytes(p[5:9], "big")
    if mode == 0:
        km = poll_km(code)
    else:
        keys = {roster_voter_id(r, code): r for r in roster}
        if voter not in keys: return "unknownVoter"
        km = roster_km(keys[voter], code)
    tlen = 32 if gatt else 8
    ks = mac(km[:32], p[:11] + p[14:22])
    plain = bytes(a ^ k for a, k in zip(p[11:14], ks))
    if not hmac.compare_digest(mac(km[32:], p[:11] + plain)[:tlen], p[14:14 + tlen]): return "badTag"
    text = answer_text(plain)
    if text is None: return "malformedAnswer"
    if gatt:
        pk, sig = p[46:78], p[78:142]
        if mode == 0 and anon_voter_id(pk) != voter: return "badSignature"
        if not ed25519_verify(pk, CONTEXT + p[:46], sig): return "badSignature"
    return ("ok", text)

DEV = bytes(range(0x20, 0x40))      # the device key of the vectors
DEV2 = bytes.fromhex("9f" * 32)
CODE = "4821-K7QXM-3PF9A"

def ballot_vector(name, code, mode, q, seq, ans, dev=DEV):
    vid, text = parse_join(code)
    seed = signing_seed(dev, mode, code)
    pk = ed25519_public(seed)
    rkey = roster_key(dev)
    if mode == 0:
        km, voter = poll_km(code), anon_voter_id(pk)
    else:
        km, voter = roster_km(rkey, code), roster_voter_id(rkey, code)
    ab = answer_bytes(ans)
    adv, full = seal(km, mode, vid, q, voter, seq, ab)
    gatt = sign_gatt(full, seed)
    lines = [f"name: {name}", "type: ballot", f"join-code: {code}", f"secret-text: {text}",
             f"poll-secret: {poll_secret(code).hex()}", f"mode: {'anonymous' if mode == 0 else 'roster'}",
             f"device-key: {dev.hex()}"]
    if mode == 1:
        lines += [f"roster-key: {rkey.hex()}", f"enrollment-code: {enrollment(rkey)}"]
    lines += [f"signing-seed: {seed.hex()}", f"public-key: {pk.hex()}",
              f"question: {q}", f"voter-id: {voter:08x}", f"sequence: {seq}", f"answer: {ans}",
              f"answer-bytes: {ab.hex()}", f"key-material: {km.hex()}",
              f"advertisement: {adv.hex()}", f"full-ballot: {full.hex()}", f"gatt: {gatt.hex()}"]
    return lines, adv, full, gatt, seed

def reject_vector(name, code, payload, expect, kind="advertisement", why=None, roster=None):
    lines = [f"name: {name}", "type: rejection", f"join-code: {code}"]
    if roster:
        lines.append(f"roster: {enrollment(roster)}")
    lines += [f"{kind}: {payload.hex()}", f"expect: {expect}"]
    if why:
        lines.append(f"why: {why}")
    return lines

def all_vectors():
    out = []
    b = {}
    # Ballots: one voter through one poll; the sequence runs per poll (§1): every new ballot takes the next number.
    for name, q, seq, ans in [("anonymous-choice-B", 1, 1, "B"), ("anonymous-changed-to-D", 1, 2, "D"),
                              ("anonymous-question-2-true", 2, 3, "true"), ("anonymous-multi-select", 3, 4, "A+C+H"),
                              ("anonymous-multi-select-one", 3, 5, "D+"), ("anonymous-ranking-full", 4, 6, "H>G>F>E>D>C>B>A"),
                              ("anonymous-ranking-partial", 4, 7, "C>A>B"), ("anonymous-ranking-one", 4, 8, "C>"),
                              ("anonymous-numeric", 5, 9, "42"), ("anonymous-numeric-negative", 5, 10, "-3")]:
        v = ballot_vector(name, CODE, 0, q, seq, ans); out.append(v[0]); b[name] = v
    v = ballot_vector("other-poll-choice-A", "1234-00000-00001", 0, 1, 1, "A", dev=DEV2); out.append(v[0])
    v = ballot_vector("roster-choice-C", CODE, 1, 1, 1, "C"); out.append(v[0]); b["roster"] = v
    # Join codes: look-alikes, case and surrounding space read as the canonical code (§2).
    out.append(["name: join-code-look-alikes", "type: join-code", "input: 4821-k7qxm-3pf9a",
                f"join-code: {canonical_join('4821-k7qxm-3pf9a')}", f"secret-text: {parse_join(CODE)[1]}",
                f"poll-secret: {poll_secret(CODE).hex()}"])
    out.append(["name: join-code-o-i-l", "type: join-code", "input: 1-OOOOO-IiLlo",
                f"join-code: {canonical_join('1-OOOOO-IiLlo')}", f"secret-text: {parse_join('1-OOOOO-IiLlo')[1]}",
                f"poll-secret: {poll_secret('1-OOOOO-IiLlo').hex()}"])
    # Enrollment codes: prefix forms (§5).
    rkey = roster_key(DEV)
    code = enrollment(rkey)
    body = code[4:]
    forms = [("dashes", code), ("spaces", "CE2 " + body.replace("-", " ")), ("joined-lower", ("ce2" + body.replace("-", "")).lower()),
             ("look-alikes", code.replace("0", "O").replace("1", "l"))]
    for label, text in forms:
        assert parse_enrollment(text) == rkey, label
        out.append([f"name: enrollment-{label}", "type: enrollment", f"input: {text}", f"roster-key: {rkey.hex()}",
                    f"enrollment-code: {code}"])
    v1 = b32(DEV + hashlib.sha256(b"clicker-enroll" + DEV).digest()[:3])
    v1code = "CE1-" + "-".join(v1[i:i + 8] for i in range(0, len(v1), 8))
    assert parse_enrollment(v1code) == "versionOne"
    out.append(["name: enrollment-version-1-refused", "type: enrollment", f"input: {v1code}", "expect: versionOne"])
    # Rejections (§8), decoded by a tally with the given join code and an empty roster unless a roster is given.
    _, adv, full, gatt, seed = b["anonymous-choice-B"]
    radv = b["roster"][1]
    vid = 4821
    km = poll_km(CODE)
    out.append(reject_vector("reject-not-ours", CODE, bytes([0x4C, 0x00, 0x02, 0x15]), "notOurs"))
    out.append(reject_vector("reject-one-byte", CODE, bytes([0xCB]), "truncated"))
    out.append(reject_vector("reject-version-1", CODE, bytes.fromhex("cb1012d501199b13d80001a002ce730c204f2bde0418"),
                             "unknownVersion", why="a version-1 ballot"))
    out.append(reject_vector("reject-unknown-mode", CODE, bytes([0xCB, 0x2F]) + adv[2:], "unknownMode"))
    out.append(reject_vector("reject-truncated", CODE, adv[:21], "truncated"))
    out.append(reject_vector("reject-trailing-bytes", CODE, adv + b"\x00", "trailingBytes"))
    out.append(reject_vector("reject-other-vote-id", "1234-K7QXM-3PF9A", adv, "otherVoteID"))
    seq0, _ = seal(km, 0, vid, 1, anon_voter_id(ed25519_public(seed)), 0, answer_bytes("B"))
    out.append(reject_vector("reject-sequence-0", CODE, seq0, "badSequence", why="sealed with the right key, sequence 0"))
    out.append(reject_vector("reject-unknown-voter", CODE, radv, "unknownVoter"))
    out.append(reject_vector("reject-roster-bad-tag", CODE, radv[:21] + bytes([radv[21] ^ 1]), "badTag",
                             roster=rkey, why="enrolled voter, tag changed"))
    bad = bytearray(adv); bad[21] ^= 1
    out.append(reject_vector("reject-bad-tag", CODE, bytes(bad), "badTag"))
    out.append(reject_vector("reject-wrong-secret", "4821-K7QXM-3PF9B", adv, "badTag"))
    flip = bytearray(adv); flip[5] ^= 0x80
    out.append(reject_vector("reject-voter-id-changed", CODE, bytes(flip), "badTag"))
    ct = bytearray(adv); ct[12] ^= 1
    out.append(reject_vector("reject-ciphertext-changed", CODE, bytes(ct), "badTag"))
    mal, malfull = seal(km, 0, vid, 1, 0x01020304, 1, bytes([4, 0, 0]))
    out.append(reject_vector("reject-malformed-answer", CODE, mal, "malformedAnswer", why="kind 04 (version-1 ranking), right key"))
    mal2, _ = seal(km, 0, vid, 1, 0x01020304, 2, bytes([0x43, 0x01, 0x50]))
    out.append(reject_vector("reject-ranking-out-of-range", CODE, mal2, "malformedAnswer", why="kind 43, code 336 = 8·7·6"))
    # GATT
    out.append(reject_vector("reject-gatt-full-ballot-only", CODE, full, "truncated", kind="gatt", why="46 bytes, no key or signature"))
    out.append(reject_vector("reject-gatt-trailing", CODE, gatt + b"\x00", "trailingBytes", kind="gatt"))
    g = bytearray(gatt); g[45] ^= 0x40
    out.append(reject_vector("reject-gatt-bad-tag", CODE, bytes(g), "badTag", kind="gatt"))
    g = bytearray(gatt); g[141] ^= 0x01
    out.append(reject_vector("reject-gatt-bad-signature", CODE, bytes(g), "badSignature", kind="gatt"))
    other = signing_seed(DEV2, 0, CODE)
    out.append(reject_vector("reject-gatt-other-key", CODE, sign_gatt(full, other), "badSignature", kind="gatt",
                             why="validly signed by a key whose hash is not the voter ID"))
    # Two failures: the earlier check in §8 wins.
    two = bytearray(seq0); two[2:4] = be16(1234)
    out.append(reject_vector("two-other-vote-id-and-sequence-0", CODE, bytes(two), "otherVoteID"))
    two = bytearray(seq0); two[21] ^= 1
    out.append(reject_vector("two-sequence-0-and-bad-tag", CODE, bytes(two), "badSequence"))
    out.append(reject_vector("two-unknown-mode-and-other-vote-id", "1234-K7QXM-3PF9A", bytes([0xCB, 0x2F]) + adv[2:], "unknownMode"))
    out.append(reject_vector("two-truncated-and-other-vote-id", "1234-K7QXM-3PF9A", adv[:21], "truncated"))
    out.append(reject_vector("two-unknown-voter-and-bad-tag", CODE, radv[:21] + bytes([radv[21] ^ 1]), "unknownVoter"))
    mg = bytearray(sign_gatt(malfull, seed)); mg[141] ^= 1
    out.append(reject_vector("two-malformed-answer-and-bad-signature", CODE, bytes(mg), "malformedAnswer", kind="gatt"))
    g = bytearray(gatt); g[45] ^= 0x40; g[141] ^= 1
    out.append(reject_vector("two-bad-tag-and-bad-signature", CODE, bytes(g), "badTag", kind="gatt"))
    return out + beacon_vectors()

# ---------------------------------------------------------------- beacon (§11)
def beacon_km(code):
    vid, _ = parse_join(code)
    return hkdf(poll_secret(code), b"beacon" + be16(vid))

def be32(v):
    return v.to_bytes(4, "big")

KIND_CODE = {"single": 1, "truefalse": 2, "multi": 3, "ranked": 4, "numeric": 5}
KIND_NAME = {v: k for k, v in KIND_CODE.items()}
PHASE = {"closed": 0, "open": 1, "question-closed": 2}
PHASE_NAME = {v: k for k, v in PHASE.items()}

def fingerprint(code, voter, q, seq):
    return mac(beacon_km(code)[32:], voter.to_bytes(4, "big") + bytes([q]) + be16(seq))[:4]

def text_block(title, options, numeric=None):
    """The text block of §11.5; `numeric` = (lowest, highest, decimals) prefixes a numeric question's form."""
    form = b""
    if numeric is not None:
        lo, hi, dec = numeric
        form = lo.to_bytes(2, "big", signed=True) + hi.to_bytes(2, "big", signed=True) + bytes([dec])
    return form + b"\x00".join([title.encode("utf-8")] + [o.encode("utf-8") for o in options])

def strong_digest(code, block):
    return mac(beacon_km(code)[:32], b"text" + block)[:16]

def text_digest(code, block):
    return strong_digest(code, block)[:4]

# Version 4: the poll's key pair, its anchor in the join code, and signatures (§2, §11.2).
def anchor(pk, vid):
    return hashlib.scrypt(pk, salt=b"clicker-v4-anchor" + be16(vid), n=32768, r=8, p=1, maxmem=64 * 1024 * 1024, dklen=32)

def anchored_join(seed, vid):
    """The join code whose secret is the first 50 bits of the anchor of the key of `seed`."""
    secret = int.from_bytes(anchor(ed25519_public(seed), vid)[:8], "big") >> 14
    chars = "".join(ALPHA[(secret >> (5 * (9 - i))) & 31] for i in range(10))
    return f"{vid}-{chars[:5]}-{chars[5:]}"

def key_mask(code):
    vid, _ = parse_join(code)
    return hkdf(poll_secret(code), b"beacon-key" + be16(vid), 32)

def signed_message(code, body):
    vid, _ = parse_join(code)
    return b"clicker-v4-beacon" + be16(vid) + body

def finish(code, body, tlen, seed):
    """Appends the tag, then (signed) the signature of the poll's key."""
    out = body + mac(beacon_km(code)[:32], body)[:tlen]
    return out + ed25519_sign(seed, signed_message(code, out)) if seed else out

def seal_state(code, counter, mode, phase, q=0, kind=None, options=0, interval_ms=None, digest=None, seed=None):
    """digest: 4 bytes (tagged) or 16 (signed), or None; seed: sign with that key (the signed form, 43)."""
    vid, _ = parse_join(code)
    status = PHASE[phase] << 6 | (0x20 if mode == "roster" else 0)
    if kind is not None:
        status |= (0x10 if digest is not None else 0) | KIND_CODE[kind]
    ival = 0 if interval_ms is None else interval_ms // 10
    body = bytes([0xCB, 0x43 if seed else 0x4B]) + be16(vid) + be32(counter) + bytes([q, status, options, ival])
    if seed:
        pk = ed25519_public(seed)
        body += (digest or bytes(16)) + bytes(a ^ b for a, b in zip(pk, key_mask(code)))
    else:
        body += digest or bytes(4)
    return finish(code, body, 8, seed)

def seal_acks(code, counter, q, fps, seed=None):
    body = bytes([0xCB, 0x44 if seed else 0x4C]) + be32(counter) + bytes([q]) + b"".join(fps)
    return finish(code, body, 4, seed)

def seal_text(code, counter, digest, index, count, chunk, seed=None):
    body = bytes([0xCB, 0x45 if seed else 0x4D]) + be32(counter) + digest + bytes([index, count]) + chunk
    return finish(code, body, 4, seed)

def open_beacon(p, code, pk=None):
    """Decodes like a voter (§11.6): ('state'|'acks'|'text', fields) or the rejection reason. With `pk`
    (the poll's key, once known) a signed frame's signature is checked too."""
    vid, _ = parse_join(code)
    if len(p) < 1 or p[0] != 0xCB: return "notOurs"
    if len(p) < 2: return "truncated"
    if p[1] in (0x20, 0x21): return "notABeacon"
    if p[1] >> 4 != 4: return "unknownVersion"
    t = p[1] & 15
    if t not in (0xB, 0xC, 0xD, 0x3, 0x4, 0x5): return "unknownFrame"
    signed = t < 8
    t |= 8
    if len(p) > 247: return "oversized"
    extra = 64 if signed else 0
    if t == 0xB:
        want = 132 if signed else 24
        if len(p) < want: return "truncated"
        if len(p) > want: return "trailingBytes"
        if int.from_bytes(p[2:4], "big") != vid: return "otherVoteID"
        tlen = 8
    elif t == 0xC:
        body = len(p) - 11 - extra
        if body < 4: return "truncated"
        if body % 4: return "badLength"
        tlen = 4
    else:
        if len(p) <= 16 + extra: return "truncated"
        tlen = 4
    end = len(p) - extra
    n = end - tlen
    if not hmac.compare_digest(mac(beacon_km(code)[:32], p[:n])[:tlen], p[n:end]): return "badTag"
    if t == 0xB:
        q, status, options, ival = p[8], p[9], p[10], p[11]
        digest = p[12:28] if signed else p[12:16]
        if ival == 1: return "malformed"
        phase, has_text, kc = status >> 6, status & 0x10, status & 15
        if phase == 0:
            if q or status & 0x1F or options or any(digest): return "malformed"
        elif phase in (1, 2):
            if kc not in KIND_NAME or (not has_text and any(digest)): return "malformed"
            want_options = KIND_NAME[kc] in ("single", "multi", "ranked")
            if (want_options and not 1 <= options <= 8) or (not want_options and options): return "malformed"
        else:
            return "malformed"
        got = ("state", int.from_bytes(p[4:8], "big"), PHASE_NAME[phase], "roster" if status & 0x20 else "anonymous",
               q, KIND_NAME.get(kc), options, ival * 10 if ival else None, digest if has_text else None,
               bytes(a ^ b for a, b in zip(p[28:60], key_mask(code))) if signed else None)
    elif t == 0xC:
        got = ("acks", int.from_bytes(p[2:6], "big"), p[6], [p[i:i + 4] for i in range(7, n, 4)])
    else:
        if p[11] == 0 or p[10] >= p[11]: return "malformed"
        got = ("text", int.from_bytes(p[2:6], "big"), p[6:10], p[10], p[11], p[12:n])
    if signed and pk is not None and not ed25519_verify(pk, signed_message(code, p[:end]), p[end:]): return "badSignature"
    return got

BEACON_TITLE = "Which planet is largest?"
BEACON_OPTIONS = ["Mercury", "Venus", "Jupiter ♃", "Mars"]   # ♃ (3 bytes) is cut across two 8-byte pages
BEACON_SEED = bytes(range(32))          # the poll's key pair of the signed vectors
FORGER_SEED = bytes(range(32, 64))      # a classmate's key pair

def beacon_vectors():
    out = []
    km = beacon_km(CODE)
    block = text_block(BEACON_TITLE, BEACON_OPTIONS)
    digest = text_digest(CODE, block)
    head = ["join-code: " + CODE, f"poll-secret: {poll_secret(CODE).hex()}", f"beacon-key-material: {km.hex()}"]
    def state(name, counter, mode, phase, q=0, kind=None, options=0, interval=None, dg=None, code=CODE, seed=None):
        f = seal_state(code, counter, mode, phase, q, kind, options, interval, dg, seed)
        lines = [f"name: {name}", "type: beacon-state", f"join-code: {code}", f"poll-secret: {poll_secret(code).hex()}",
                 f"beacon-key-material: {beacon_km(code).hex()}"]
        if seed:
            lines += [f"key-seed: {seed.hex()}", f"public-key: {ed25519_public(seed).hex()}"]
        lines += [f"counter: {counter}", f"mode: {mode}", f"phase: {phase}"]
        if kind is not None:
            lines += [f"question: {q}", f"kind: {kind}", f"options: {options}"]
        lines += [f"interval: {'stop' if interval is None else f'{interval} ms'}",
                  f"text-digest: {dg.hex() if dg is not None else 'none'}", f"frame: {f.hex()}"]
        assert len(f) == (132 if seed else 24)
        out.append(lines)
        return f
    s_open = state("beacon-state-open", 1000, "anonymous", "open", 2, "single", 4, 100, digest)
    state("beacon-state-open-numeric", 1001, "anonymous", "open", 5, "numeric", 0, 250)
    state("beacon-state-roster-ranked", 1002, "roster", "open", 7, "ranked", 5, 2550)
    state("beacon-state-question-closed", 1003, "anonymous", "question-closed", 2, "truefalse", 0, None)
    s_closed = state("beacon-state-poll-closed", 4294967295, "anonymous", "closed")
    # Acknowledgements: ballots of the §9 voter and three others, question 2.
    ballots = [(0x0502B808, 3), (0x8355CD9C, 1), (0xE9A351E4, 2), (0x01020304, 65535)]
    fps = [fingerprint(CODE, v, 2, s) for v, s in ballots]
    a = seal_acks(CODE, 1004, 2, fps[:3])
    out.append(["name: beacon-acks-legacy", "type: beacon-acks"] + head +
               ["counter: 1004", "question: 2", "ballots: " + " ".join(f"{v:08x}/{s}" for v, s in ballots[:3]),
                "fingerprints: " + " ".join(f.hex() for f in fps[:3]), f"frame: {a.hex()}"])
    assert len(a) <= 24
    a4 = seal_acks(CODE, 1005, 2, fps)
    out.append(["name: beacon-acks-four", "type: beacon-acks"] + head +
                ["counter: 1005", "question: 2", "ballots: " + " ".join(f"{v:08x}/{s}" for v, s in ballots),
                 "fingerprints: " + " ".join(f.hex() for f in fps), f"frame: {a4.hex()}"])
    assert len(a4) == 27
    # Text: the block in legacy pages of 8 bytes, and in one extended page.
    def text(name, code, title, options, chunk, first, numeric=None, seed=None):
        b = text_block(title, options, numeric)
        d = text_digest(code, b)
        pages = [b[i:i + chunk] for i in range(0, len(b), chunk)]
        lines = [f"name: {name}", "type: beacon-text", f"join-code: {code}", f"poll-secret: {poll_secret(code).hex()}",
                 f"beacon-key-material: {beacon_km(code).hex()}"]
        if seed:
            lines += [f"key-seed: {seed.hex()}", f"public-key: {ed25519_public(seed).hex()}"]
        if numeric:
            lines += ["kind: numeric", f"lowest: {numeric[0]}", f"highest: {numeric[1]}", f"decimals: {numeric[2]}"]
        lines += [f"title: {title}"] + [f"option-{chr(97 + i)}: {o}" for i, o in enumerate(options)] + [
            f"text-block: {b.hex()}", f"text-digest: {d.hex()}"]
        if seed:
            lines.append(f"strong-digest: {strong_digest(code, b).hex()}")
        lines += [f"chunk-length: {chunk}", f"first-counter: {first}", f"pages: {len(pages)}"]
        for i, c in enumerate(pages):
            lines.append(f"page-{i}: {seal_text(code, first + i, d, i, len(pages), c, seed).hex()}")
        out.append(lines)
    text("beacon-text-legacy", CODE, BEACON_TITLE, BEACON_OPTIONS, 8, 2000)
    text("beacon-text-extended", CODE, BEACON_TITLE, BEACON_OPTIONS, 231, 3000)
    # Version 4, signed: the poll's key pair and the join code that commits to it.
    SIGNED = anchored_join(BEACON_SEED, 4821)
    pk = ed25519_public(BEACON_SEED)
    A = anchor(pk, 4821)
    out.append(["name: beacon-anchor", "type: beacon-anchor", "vote-id: 4821", f"key-seed: {BEACON_SEED.hex()}",
                f"public-key: {pk.hex()}", f"anchor: {A.hex()}",
                f"secret: {int.from_bytes(A[:8], 'big') >> 14:013x}", f"join-code: {SIGNED}",
                f"poll-secret: {poll_secret(SIGNED).hex()}", f"key-mask: {key_mask(SIGNED).hex()}",
                f"hidden-key: {bytes(a ^ b for a, b in zip(pk, key_mask(SIGNED))).hex()}"])
    sblock = text_block(BEACON_TITLE, BEACON_OPTIONS)
    s_signed = state("beacon-state-signed", 5000, "anonymous", "open", 2, "single", 4, 100, strong_digest(SIGNED, sblock),
                     code=SIGNED, seed=BEACON_SEED)
    nblock = text_block("g in m/s²", [], (900, 1050, 2))
    state("beacon-state-signed-numeric", 5001, "anonymous", "open", 3, "numeric", 0, 250, strong_digest(SIGNED, nblock),
          code=SIGNED, seed=BEACON_SEED)
    state("beacon-state-signed-closed", 5002, "roster", "closed", code=SIGNED, seed=BEACON_SEED)
    sfps = [fingerprint(SIGNED, v, 2, s) for v, s in ballots]
    sa = seal_acks(SIGNED, 5003, 2, sfps, BEACON_SEED)
    out.append(["name: beacon-acks-signed", "type: beacon-acks", f"join-code: {SIGNED}", f"poll-secret: {poll_secret(SIGNED).hex()}",
                f"beacon-key-material: {beacon_km(SIGNED).hex()}", f"key-seed: {BEACON_SEED.hex()}", f"public-key: {pk.hex()}",
                "counter: 5003", "question: 2", "ballots: " + " ".join(f"{v:08x}/{s}" for v, s in ballots),
                "fingerprints: " + " ".join(f.hex() for f in sfps), f"frame: {sa.hex()}"])
    text("beacon-text-signed", SIGNED, BEACON_TITLE, BEACON_OPTIONS, 164, 5100, seed=BEACON_SEED)
    text("beacon-text-numeric", SIGNED, "g in m/s²", [], 164, 5200, numeric=(900, 1050, 2), seed=BEACON_SEED)
    # Rejections, decoded by a voter holding the join code (and, with public-key, the poll's key).
    def rej(name, frame, expect, why=None, code=CODE, key=None):
        l = [f"name: {name}", "type: beacon-rejection", f"join-code: {code}"]
        if key: l.append(f"public-key: {key.hex()}")
        l += [f"frame: {frame.hex()}", f"expect: {expect}"]
        if why: l.append(f"why: {why}")
        out.append(l)
    rej("beacon-reject-other-join-code", s_open, "badTag", why="sealed with the key of 4821-K7QXM-3PF9A", code="4821-K7QXM-3PF9B")
    rej("beacon-reject-other-vote-id", s_open, "otherVoteID", code="1234-K7QXM-3PF9A")
    rej("beacon-reject-not-ours", bytes([0x4C, 0x00, 0x02, 0x15]), "notOurs")
    rej("beacon-reject-one-byte", bytes([0xCB]), "truncated")
    rej("beacon-reject-ballot", bytes.fromhex("cb2012d5010502b8080001998a9a2749ece8f0076fbf"), "notABeacon",
        why="the anonymous-choice-B advertisement of §9")
    rej("beacon-reject-unknown-frame", bytes([0xCB, 0x4E]) + s_open[2:], "unknownFrame")
    rej("beacon-reject-version-3", bytes([0xCB, 0x2B]) + s_open[2:], "unknownVersion", why="a version-3 STATE's type byte")
    rej("beacon-reject-state-truncated", s_open[:23], "truncated")
    rej("beacon-reject-state-trailing", s_open + b"\x00", "trailingBytes")
    rej("beacon-reject-acks-no-fingerprint", a[:7] + a[-4:], "truncated")
    rej("beacon-reject-acks-partial-fingerprint", a[:-5] + a[-4:], "badLength")
    rej("beacon-reject-text-empty-chunk", bytes([0xCB, 0x4D]) + bytes(14), "truncated")
    rej("beacon-reject-oversized", bytes([0xCB, 0x4C]) + bytes(246), "oversized", why="248 bytes")
    bad = bytearray(s_open); bad[8] ^= 1
    rej("beacon-reject-question-changed", bytes(bad), "badTag")
    bad = bytearray(a); bad[8] ^= 1
    rej("beacon-reject-fingerprint-changed", bytes(bad), "badTag")
    rej("beacon-reject-interval-1", seal_state(CODE, 1006, "anonymous", "open", 2, "single", 4, 10, None), "malformed",
        why="interval code 1, right key")
    rej("beacon-reject-truefalse-options", seal_state(CODE, 1007, "anonymous", "open", 2, "truefalse", 2, 100, None),
        "malformed", why="true/false with 2 options, right key")
    rej("beacon-reject-single-9-options", seal_state(CODE, 1008, "anonymous", "open", 2, "single", 9, 100, None),
        "malformed", why="9 options, right key")
    rej("beacon-reject-page-beyond-count", seal_text(CODE, 1009, digest, 3, 3, b"x"), "malformed",
        why="page index 3 of 3, right key")
    rej("beacon-reject-signed-truncated", s_signed[:131], "truncated", code=SIGNED, key=pk)
    bad = bytearray(s_signed); bad[100] ^= 1
    rej("beacon-reject-signature-flipped", bytes(bad), "badSignature", code=SIGNED, key=pk,
        why="one bit of the signature flipped")
    forged = seal_state(SIGNED, 5004, "anonymous", "open", 3, "single", 4, 100, None, seed=FORGER_SEED)
    rej("beacon-reject-signed-by-another-key", forged, "badSignature", code=SIGNED, key=pk,
        why=f"signed by the key of seed {FORGER_SEED.hex()}, right join code")
    return out

def render(vs):
    return "\n\n".join("```vector\n" + "\n".join(v) + "\n```" for v in vs) + "\n"

def parse_blocks(doc):
    blocks = []
    for body in re.findall(r"```vector\n(.*?)```", doc, re.S):
        d = {}
        for line in body.strip("\n").split("\n"):
            k, v = line.split(":", 1)
            d[k] = v.strip()
        blocks.append(d)
    return blocks

def kit(doc):
    return json.dumps({"protocol": "clicker wire protocol", "version": 4, "source": "docs/PROTOCOL-VECTORS.md (PROTOCOL.md §9 and §11.9)",
                       "vectors": parse_blocks(doc)}, indent=1, ensure_ascii=False) + "\n"

def self_check(vs):
    """Decodes every ballot and rejection with the decoder above (so the vectors agree with §8)."""
    for v in vs:
        d = dict(l.split(": ", 1) for l in v)
        if d["type"] == "ballot":
            roster = [bytes.fromhex(d["roster-key"])] if "roster-key" in d else []
            for kind in ("advertisement", "gatt"):
                got = decode(bytes.fromhex(d[kind]), d["join-code"], roster, gatt=kind == "gatt")
                assert got == ("ok", d["answer"]), (d["name"], kind, got)
        elif d["type"] == "beacon-state":
            pk = bytes.fromhex(d["public-key"]) if "public-key" in d else None
            got = open_beacon(bytes.fromhex(d["frame"]), d["join-code"], pk)
            assert got[0] == "state" and got[1] == int(d["counter"]) and got[2] == d["phase"] and got[3] == d["mode"], (d["name"], got)
            assert (got[8].hex() if got[8] else "none") == d["text-digest"], d["name"]
            assert got[9] == pk, d["name"]
            if "kind" in d:
                assert (got[4], got[5], got[6]) == (int(d["question"]), d["kind"], int(d["options"])), d["name"]
        elif d["type"] == "beacon-acks":
            pk = bytes.fromhex(d["public-key"]) if "public-key" in d else None
            got = open_beacon(bytes.fromhex(d["frame"]), d["join-code"], pk)
            assert got[0] == "acks" and got[1] == int(d["counter"]) and got[2] == int(d["question"]), d["name"]
            assert " ".join(f.hex() for f in got[3]) == d["fingerprints"], d["name"]
        elif d["type"] == "beacon-text":
            pk = bytes.fromhex(d["public-key"]) if "public-key" in d else None
            block = b""
            for i in range(int(d["pages"])):
                got = open_beacon(bytes.fromhex(d[f"page-{i}"]), d["join-code"], pk)
                assert got[0] == "text" and got[2].hex() == d["text-digest"] and (got[3], got[4]) == (i, int(d["pages"])), d["name"]
                block += got[5]
            assert block.hex() == d["text-block"] and text_digest(d["join-code"], block).hex() == d["text-digest"], d["name"]
            if "strong-digest" in d:
                assert strong_digest(d["join-code"], block).hex() == d["strong-digest"], d["name"]
        elif d["type"] == "beacon-anchor":
            pk = bytes.fromhex(d["public-key"])
            assert ed25519_public(bytes.fromhex(d["key-seed"])) == pk, d["name"]
            assert anchored_join(bytes.fromhex(d["key-seed"]), int(d["vote-id"])) == d["join-code"], d["name"]
            assert bytes(a ^ b for a, b in zip(pk, key_mask(d["join-code"]))).hex() == d["hidden-key"], d["name"]
        elif d["type"] == "beacon-rejection":
            pk = bytes.fromhex(d["public-key"]) if "public-key" in d else None
            got = open_beacon(bytes.fromhex(d["frame"]), d["join-code"], pk)
            assert got == d["expect"], (d["name"], got)
        elif d["type"] == "rejection":
            roster = [parse_enrollment(d["roster"])] if "roster" in d else []
            kind = "gatt" if "gatt" in d else "advertisement"
            got = decode(bytes.fromhex(d[kind]), d["join-code"], roster, gatt=kind == "gatt")
            assert got == d["expect"], (d["name"], got)

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:]
    if args and args[0] in ("--check", "--write-json"):
        path = args[1] if len(args) > 1 else os.path.join(here, "PROTOCOL-VECTORS.md")
        doc = open(path, encoding="utf-8").read()
        jpath = os.path.join(os.path.dirname(os.path.abspath(path)), "vectors.json")
        if args[0] == "--write-json":
            open(jpath, "w", encoding="utf-8").write(kit(doc))
            print(f"wrote {jpath}")
            sys.exit(0)
        vs = all_vectors()
        self_check(vs)
        found = re.findall(r"```vector\n(.*?)```", doc, re.S)
        want = ["\n".join(v) + "\n" for v in vs]
        if found != want:
            names = [re.search(r"name: (.*)", f).group(1) for f in found if f not in want]
            print("PROTOCOL-VECTORS.md vectors differ from the reference implementation:", names[:5] or "count/order",
                  file=sys.stderr)
            sys.exit(1)
        if not os.path.exists(jpath) or open(jpath, encoding="utf-8").read() != kit(doc):
            print("docs/vectors.json is not what --write-json makes of PROTOCOL-VECTORS.md; run vectors.py --write-json",
                  file=sys.stderr)
            sys.exit(1)
        print(f"{len(found)} vectors match, vectors.json matches")
    elif args and args[0] == "--room":
        # A room of N anonymous voters for load generators: "ADDRESS ADVERTISEMENT-HEX" per line.
        # Voter i has device key sha256("room" || i) and answers A-D in turn.
        n = int(args[1])
        code = args[2] if len(args) > 2 else CODE
        q = int(args[3]) if len(args) > 3 else 1
        vid, _ = parse_join(code)
        km = poll_km(code)
        for i in range(n):
            dev = hashlib.sha256(b"room" + i.to_bytes(4, "big")).digest()
            voter = anon_voter_id(ed25519_public(signing_seed(dev, 0, code)))
            adv, _ = seal(km, 0, vid, q, voter, 1, answer_bytes("ABCD"[i % 4]))
            print(f"C0:00:00:{i >> 16 & 255:02X}:{i >> 8 & 255:02X}:{i & 255:02X} {adv.hex()}")
    elif args and args[0] == "--beacon":
        sys.stdout.write(render(beacon_vectors()))
    else:
        sys.stdout.write(render(all_vectors()))
