"""The voters of the fault suite: a hall of seats whose voters join the simulated air of every
receiver in range of their seat (the air's socket protocol, Sources/ClickerSim/SocketSupport.swift)
and advertise ballots sealed by the protocol's reference implementation (docs/vectors.py).

A receiver's air lives in the receiver's process (`clicker-tally receiver --radio sim` hosts it), so
a receiver killed takes its air with it: its voters see the connection end and join again, with the
ballot they show now, when a receiver is back on that socket."""
import importlib.util
import os
import random
import socket
import struct
import threading

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COMPANY_ID = 0xFFFF  # BallotFormat.companyID
HELLO, ADVERTISE, RESULT = 0x01, 0x02, 0x81
ADVERTISING_INTERVAL_US = 150_000


def load_vectors():
    spec = importlib.util.spec_from_file_location("vectors", os.path.join(ROOT, "docs", "vectors.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class AirLink:
    """One voter's device on one receiver's air: a socket that says hello, then advertises. Requests
    are sent without waiting for their replies (the host answers each in order), so that a few
    hundred devices join a restarted receiver's air at once; the replies are read by ``poll``,
    and a refusal is counted."""

    def __init__(self, path, address, rssi):
        self.path, self.address, self.rssi = path, address, rssi
        self.sock = None
        self.next_id = 1
        self.inbox = b""
        self.refusals = []

    def _send(self, kind, body):
        frame = struct.pack(">I", self.next_id) + body
        self.next_id += 1
        self.sock.sendall(struct.pack(">IB", len(frame) + 1, kind) + frame)

    def show(self, payload):
        """Advertises `payload` (joining the air first if needed); False when the air is not there."""
        try:
            if self.sock is None:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)
                s.connect(self.path)
                # Non-blocking from here: a frame is a few dozen bytes, and a full buffer (a host
                # that stopped reading) drops the device, to join again.
                s.setblocking(False)
                self.sock, self.next_id, self.inbox = s, 1, b""
                self._send(HELLO, struct.pack(">HQh", 1, self.address, self.rssi))
            self._send(ADVERTISE, struct.pack(">HIB", COMPANY_ID, ADVERTISING_INTERVAL_US, 0) + payload)
            return True
        except OSError:
            self.drop()
            return False

    def poll(self):
        """Reads the host's replies; False when the host has gone (the receiver was killed)."""
        if self.sock is None:
            return False
        try:
            while True:
                try:
                    data = self.sock.recv(65536)
                except BlockingIOError:
                    break
                if not data:
                    self.drop()
                    return False
                self.inbox += data
        except OSError:
            self.drop()
            return False
        while len(self.inbox) >= 5:
            n, kind = struct.unpack(">IB", self.inbox[:5])
            if len(self.inbox) < 4 + n:
                break
            body, self.inbox = self.inbox[5:4 + n], self.inbox[4 + n:]
            if kind == RESULT and len(body) >= 5 and body[4] != 0:
                self.refusals.append(body[5:].decode(errors="replace"))
        return True

    def drop(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None


class Feeder:
    """The devices of the voters one receiver hears, on that receiver's air, driven by a thread of
    their own: a slow or absent air (a receiver starting, or killed) holds up no other receiver's
    voters and not the schedule. Shows each voter's latest advertisement; every 0.2 s, reads the
    host's replies and joins again the devices whose air went away, once it is back."""

    def __init__(self, links):
        self.links = links  # voter index -> AirLink
        self.latest = {}    # voter index -> the advertisement it shows now
        self.dirty = set()
        self.cond = threading.Condition()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def show(self, i, payload):
        with self.cond:
            self.latest[i] = payload
            self.dirty.add(i)
            self.cond.notify()

    def _run(self):
        while True:
            with self.cond:
                if not self.dirty and not self.stopping:
                    self.cond.wait(0.2)
                if self.stopping:
                    return
                todo = [(i, self.latest[i]) for i in sorted(self.dirty)]
                self.dirty.clear()
                shown = dict(self.latest)
            for i, payload in todo:
                self.links[i].show(payload)
            for i, link in self.links.items():
                if not link.poll() and i in shown and os.path.exists(link.path):
                    link.show(shown[i])

    def close(self):
        with self.cond:
            self.stopping = True
            self.cond.notify()
        self.thread.join()
        for link in self.links.values():
            link.drop()


class Hall:
    """`rows` × `seats` anonymous voters; receiver k at row `positions[k]` hears the rows within
    `reach` of it, at a signal that weakens with the distance."""

    def __init__(self, code, rows, seats, positions, reach, air_paths, seed):
        self.v = load_vectors()
        self.code = code
        self.vid, _ = self.v.parse_join(code)
        self.km = self.v.poll_km(code)
        rng = random.Random(seed)
        self.voters = []  # (row, voter id)
        ids = set()
        for row in range(rows):
            for seat in range(seats):
                while True:
                    vid = rng.getrandbits(32)
                    if vid not in ids:
                        ids.add(vid)
                        break
                self.voters.append((row, vid))
        # The receivers in reach of each voter's seat, and each receiver's devices.
        self.reach = [[k for k, pos in enumerate(positions) if abs(row - pos) <= reach] for row, _ in self.voters]
        self.feeders = []
        for k, pos in enumerate(positions):
            links = {i: AirLink(air_paths[k], 0xC0FFEE000000 + i, -45 - 3 * abs(row - pos))
                     for i, (row, _) in enumerate(self.voters) if k in self.reach[i]}
            self.feeders.append(Feeder(links))

    def heard_by(self, i):
        return self.reach[i]

    def seal(self, i, question, sequence, letter):
        adv, _ = self.v.seal(self.km, 0, self.vid, question, self.voters[i][1], sequence, self.v.answer_bytes(letter))
        return adv

    def show(self, i, payload):
        """Voter i shows `payload` from now on, on the air of every receiver in reach (when there)."""
        for k in self.reach[i]:
            self.feeders[k].show(i, payload)

    def close(self):
        for f in self.feeders:
            f.close()

    def refusals(self):
        """What the air hosts refused (nothing, when the devices speak the protocol right)."""
        return [r for f in self.feeders for link in f.links.values() for r in link.refusals]
