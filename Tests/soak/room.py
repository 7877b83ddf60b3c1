"""A room of anonymous voters whose ballots are sealed by the protocol's reference implementation
(docs/vectors.py), for the soak benchmark's bluetoothd stand-in."""
import importlib.util
import os
import random

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_vectors():
    spec = importlib.util.spec_from_file_location("vectors", os.path.join(ROOT, "docs", "vectors.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Room:
    """N anonymous voters of one poll, their ballots sealed by docs/vectors.py."""

    def __init__(self, n, code, seed):
        self.v = load_vectors()
        self.n = n
        self.vid, _ = self.v.parse_join(code)
        self.km = self.v.poll_km(code)
        # As `vectors.py --room`: an anonymous voter's ID comes from its per-poll signing key.
        devs = [self.v.hashlib.sha256(b"soak" + i.to_bytes(4, "big")).digest() for i in range(n)]
        self.ids = [self.v.anon_voter_id(self.v.ed25519_public(self.v.signing_seed(d, 0, code))) for d in devs]
        self.rng = random.Random(seed)

    def seal(self, i, q, seq, letter):
        adv, _ = self.v.seal(self.km, 0, self.vid, q, self.ids[i], seq, self.v.answer_bytes(letter))
        return adv.hex()

    def forged(self):
        """A ballot of this poll from a random voter ID with a guessed tag."""
        adv, _ = self.v.seal(self.km, 0, self.vid, 1, self.rng.getrandbits(32), 1, self.v.answer_bytes("A"))
        return (adv[:-8] + self.rng.getrandbits(64).to_bytes(8, "big")).hex()

    def plan(self, q, seconds, tenfold):
        """Each voter's ballots for question q: [(lecture second, sequence, letter)], or [] (abstains).
        Realistic: answers after 2-25 s, 15 % change once 3-12 s later. Tenfold: 1.5 changes each
        on average, spread over the first 60 % of the question (the rest, 2 s of wall time at x60, is
        for the last change to reach the daemon through a loaded machine before the question closes:
        the soak checks that nothing is lost, not how fast)."""
        plans = []
        for _ in range(self.n):
            r = self.rng
            if r.random() < 0.03:
                plans.append([])
                continue
            t = r.uniform(2, 8) if r.random() < 0.4 else r.uniform(6, 25)
            letters = "ABCD"
            a = r.choice(letters)
            ballots = [(t, 1, a)]
            if tenfold:
                k = min(8, int(r.expovariate(1 / 1.5) + 0.5))
                times = sorted(r.uniform(t, max(t + 1, 0.6 * seconds)) for _ in range(k))
            else:
                times = [t + r.uniform(3, 12)] if r.random() < 0.15 else []
            for j, tc in enumerate(times):
                a = r.choice([x for x in letters if x != a])
                ballots.append((tc, j + 2, a))
            plans.append(ballots)
        return plans
