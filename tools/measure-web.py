#!/usr/bin/python3
"""The projector server's cost: the tally daemon's added CPU with 200 SSE clients, and vote commit
latency with and without them, under the same vote load in the same run. Started by
tools/measure-web.sh, which builds, starts a private bus and the daemon:

    clicker-tally daemon --simulate 300 --simulate-speed 10 --simulate-churn 100 --no-gatt-confirm \
                         --air SOCK --web 127.0.0.1:0 --bus system

Windows alternate: 0 clients, 200 clients, 0, 200, ... (REPEATS each). A window is WINDOW seconds
of the daemon's own CPU (utime + stime of /proc/PID/stat; CPU time counts only while it runs, so
other jobs on the machine do not inflate it). Before a 200-client window all 200 clients are
connected and have each received a snapshot; during it they read every event. The figure is
median(200) - median(0), as % of one core.

Commit latency: a probe voter (clicker-vote --radio sim on the daemon's air) changes its answer
PROBES times per window; each probe is timed from the answer written to its stdin to the first
D-Bus Results reply listing the probe's ballot (voter, sequence, answer). The daemon commits a
ballot in the turn that counts it, before any reader sees it, so the reply shows a committed ballot.

Bounded: 200 clients, REPEATS x 2 windows of WINDOW seconds, a timeout on every wait.
"""
import json
import math
import os
import re
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import time

import dbus

CLIENTS = int(os.environ.get("CLIENTS", "200"))
REPEATS = int(os.environ.get("REPEATS", "3"))
WINDOW = float(os.environ.get("WINDOW", "20"))
PROBES = int(os.environ.get("PROBES", "10"))
TICK = os.sysconf("SC_CLK_TCK")
MARK = b"event: snapshot"


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))


class SSEClients:
    """CLIENTS raw-socket event-stream readers in one selector loop (no library)."""

    def __init__(self, host, port, path):
        self.host, self.port, self.path = host, port, path
        self.sel = selectors.DefaultSelector()
        self.socks = []
        self.events = {}
        self.buf = {}
        self.accepted = set()

    def open(self, n, timeout=30):
        request = f"GET {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: text/event-stream\r\n\r\n".encode()
        for _ in range(n):
            s = socket.create_connection((self.host, self.port), timeout=5)
            s.sendall(request)
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ)
            self.socks.append(s)
            self.events[s] = 0
            self.buf[s] = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.1)
            if all(self.events[s] > 0 for s in self.socks):
                return True
        return False

    def pump(self, seconds):
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            for key, _ in self.sel.select(left):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    raise RuntimeError("the server closed an event stream")
                b = self.buf[s] + data
                if s not in self.accepted:
                    if b"\r\n" not in b:
                        self.buf[s] = b
                        continue
                    status = b.split(b"\r\n", 1)[0]
                    if b" 200 " not in status + b" ":
                        raise RuntimeError("event stream refused: " + status.decode(errors="replace"))
                    self.accepted.add(s)
                self.events[s] += b.count(MARK)
                # A mark cut in two by the read is found whole next time; a whole one is never kept.
                self.buf[s] = b[-(len(MARK) - 1):]

    def total(self):
        return sum(self.events.values())

    def close(self):
        for s in self.socks:
            self.sel.unregister(s)
            s.close()
        self.socks, self.events, self.buf, self.accepted = [], {}, {}, set()


class Probe:
    """A clicker-vote process on the daemon's air whose answer changes on request."""

    def __init__(self, vote, air, code, state):
        env = dict(os.environ, XDG_STATE_HOME=state)
        self.p = subprocess.Popen([vote, "--radio", "sim", "--air", air, "--interval-ms", "20", code, "A"],
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, bufsize=1)
        line = self.p.stdout.readline()
        m = re.match(r"voting (\S+) as voter ([0-9a-f]{8}) \(sequence (\d+)\)", line)
        if not m:
            raise RuntimeError(f"probe voter did not start: {line!r}")
        self.voter, self.answer, self.sequence = m.group(2), m.group(1), int(m.group(3))

    def change(self, answer):
        self.p.stdin.write(answer + "\n")
        self.p.stdin.flush()
        t0 = time.monotonic()
        line = self.p.stdout.readline()
        m = re.match(r"changed to (\S+) \(sequence (\d+)\)", line)
        if not m:
            raise RuntimeError(f"probe voter did not change: {line!r}")
        self.answer, self.sequence = m.group(1), int(m.group(2))
        return t0

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()


def mann_whitney_p(xs, ys):
    """Two-sided p of the Mann-Whitney U test (normal approximation, no tie correction): whether
    latencies with clients tend to be larger or smaller than without."""
    ranked = sorted([(v, 0) for v in xs] + [(v, 1) for v in ys])
    u = sum(i + 1 for i, (_, g) in enumerate(ranked) if g == 1) - len(ys) * (len(ys) + 1) / 2
    mu, sd = len(xs) * len(ys) / 2, (len(xs) * len(ys) * (len(xs) + len(ys) + 1) / 12) ** 0.5
    return math.erfc(abs(u - mu) / sd / 2 ** 0.5)


def main():
    daemon_pid, vote, air, code, url, state = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
    m = re.match(r"http://([^:/]+):(\d+)/", url)
    host, port = m.group(1), int(m.group(2))
    tally = dbus.Interface(dbus.SystemBus().get_object("org.clicker.Tally1", "/org/clicker/Tally1"), "org.clicker.Tally1")

    def results():
        return json.loads(str(tally.Results(dbus.UInt32(0))))

    probe = Probe(vote, air, code, state)
    letters = "ABCD"

    def time_probe(clients):
        """One answer change, timed to the Results reply listing it; the clients read meanwhile."""
        nxt = letters[(letters.index(probe.answer) + 1) % 4] if probe.answer in letters else "A"
        t0 = probe.change(nxt)
        deadline = t0 + 10
        while time.monotonic() < deadline:
            for row in results()["ballots"]:
                if row["voter"] == probe.voter and row["sequence"] >= probe.sequence and row["answer"] == probe.answer:
                    return time.monotonic() - t0
            if clients:
                clients.pump(0.005)
            else:
                time.sleep(0.005)
        raise RuntimeError("probe ballot not counted within 10 s")

    def window(n):
        clients = None
        if n:
            clients = SSEClients(host, port, "/events")
            if not clients.open(n):
                raise RuntimeError(f"not all {n} clients got a snapshot")
        before_events = clients.total() if clients else 0
        status0 = json.loads(str(tally.Status()))
        t0, c0 = time.monotonic(), cpu_ticks(daemon_pid)
        latencies = []
        spacing = WINDOW / PROBES
        for i in range(PROBES):
            latencies.append(time_probe(clients))
            rest = t0 + (i + 1) * spacing - time.monotonic()
            if rest > 0:
                if clients:
                    clients.pump(rest)
                else:
                    time.sleep(rest)
        t1, c1 = time.monotonic(), cpu_ticks(daemon_pid)
        status1 = json.loads(str(tally.Status()))
        events = (clients.total() - before_events) if clients else 0
        if clients:
            clients.close()
        cores = (c1 - c0) / TICK / (t1 - t0)
        rate = (status0.get("votesPerSecond", 0) + status1.get("votesPerSecond", 0)) / 2
        print(f"  {n:3d} clients: {100 * cores:5.1f}% of a core over {t1 - t0:.1f} s, ~{rate:.0f} votes/s, "
              f"commit latency median {1000 * statistics.median(latencies):.0f} ms "
              f"(max {1000 * max(latencies):.0f} ms)"
              + (f", {events / n / (t1 - t0):.1f} events/s per client" if n else ""), flush=True)
        return cores, latencies

    cpu = {0: [], CLIENTS: []}
    lat = {0: [], CLIENTS: []}
    try:
        for _ in range(REPEATS):
            for n in (0, CLIENTS):
                c, l = window(n)
                cpu[n].append(c)
                lat[n] += l
    finally:
        probe.stop()
    added = 100 * (statistics.median(cpu[CLIENTS]) - statistics.median(cpu[0]))
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
    print(f"daemon CPU: 0 clients median {100 * statistics.median(cpu[0]):.1f}%, {CLIENTS} clients median "
          f"{100 * statistics.median(cpu[CLIENTS]):.1f}% of a core: added {added:+.1f}% (target <= 5%)")
    for n in (0, CLIENTS):
        print(f"commit latency with {n:3d} clients: median {1000 * statistics.median(lat[n]):.0f} ms, "
              f"p90 {1000 * q(lat[n], 0.9):.0f} ms, max {1000 * max(lat[n]):.0f} ms ({len(lat[n])} probes)")
    print(f"commit latency, {CLIENTS} clients against 0: Mann-Whitney p = {mann_whitney_p(lat[0], lat[CLIENTS]):.2f} "
          "(small p: the distributions differ)")
    print("RESULT", json.dumps({"added_cpu_percent": round(added, 2),
                                "cpu_percent": {str(k): [round(100 * x, 2) for x in v] for k, v in cpu.items()},
                                "latency_ms": {str(k): [round(1000 * x, 1) for x in v] for k, v in lat.items()}}))


if __name__ == "__main__":
    main()
