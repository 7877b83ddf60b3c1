"""The processes of the soak benchmark (private bus, daemon, bluetoothd stand-in) and what /proc,
the daemon's log and its database say about them."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CODE = "4821-K7QXM-3PF9A"
MB = 1e6


class Proc:
    @staticmethod
    def status(pid):
        out = {}
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                        out[k] = int(v.split()[0])
        except OSError:
            pass
        return out

    @staticmethod
    def anonymous(pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Anonymous:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    @staticmethod
    def fds(pid):
        try:
            return len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return None

    @staticmethod
    def cpu(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return None


def wait_for(pred, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


class Env:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.bus = None
        self.env = dict(os.environ, XDG_RUNTIME_DIR=work, XDG_STATE_HOME=os.path.join(work, "state"))

    def start_bus(self):
        log = open(os.path.join(self.work, "bus.log"), "w")
        self.bus = subprocess.Popen([os.path.join(ROOT, "Tests/Harness/private-bus.sh"), self.work],
                                    stdout=subprocess.DEVNULL, stderr=log)
        sock = os.path.join(self.work, "bus")
        if not wait_for(lambda: os.path.exists(sock), 10):
            raise SystemExit("dbus-daemon did not start")
        self.env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + sock

    def tally(self, *cmd, timeout=20):
        r = subprocess.run([self.args.tally, *cmd], env=self.env, capture_output=True, text=True, timeout=timeout)
        return r.stdout if r.returncode == 0 else None

    def stop(self):
        if self.bus:
            self.bus.terminate()
            self.bus.wait()


class Daemon:
    def __init__(self, env, name, extra):
        self.env, self.name = env, name
        self.state = os.path.join(env.work, "state-" + name)
        self.db = os.path.join(self.state, "clicker", "clicker.sqlite")
        self.log = os.path.join(env.work, name + ".log")
        e = dict(env.env, XDG_STATE_HOME=self.state)
        self.penv = e
        self.p = subprocess.Popen([env.args.tally, "daemon", "--bus", "system", "--join-code", CODE,
                                   "--log-statistics", str(env.args.stats_every), *extra],
                                  env=e, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        if not wait_for(lambda: self.call("status") is not None, 30, 0.2):
            raise SystemExit(f"{name}: the daemon did not come up; see {self.log}")
        self._pos, self._last = 0, {}

    def call(self, *cmd):
        r = subprocess.run([self.env.args.tally, *cmd], env=self.penv, capture_output=True, text=True, timeout=30)
        return r.stdout if r.returncode == 0 else None

    def results(self, q):
        out = self.call("results", "--json", "--question", str(q))
        try:
            return json.loads(out) if out else None
        except ValueError:
            return None

    def statistics(self):
        """The latest `statistics {...}` line of the daemon's log."""
        with open(self.log, errors="replace") as f:
            f.seek(self._pos)
            chunk = f.read()
            self._pos = f.tell()
        for line in chunk.splitlines():
            i = line.find("statistics {")
            if i >= 0:
                try:
                    self._last = json.loads(line[i + len("statistics "):])
                except ValueError:
                    pass
        return self._last

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def store_rows(db):
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2)
        try:
            b = c.execute("SELECT count(*) FROM ballot").fetchone()[0]
            r = c.execute("SELECT count(*) FROM rejection").fetchone()[0]
            q = c.execute("SELECT count(*) FROM question").fetchone()[0]
        finally:
            c.close()
        return b, r, q
    except sqlite3.Error:
        return None, None, None


def fsize(p):
    try:
        return os.path.getsize(p)
    except OSError:
        return 0


# ---------------------------------------------------------------- sampling

COLUMNS = ["scenario", "wall_s", "lecture_min", "question", "rss_kb", "rss_anon_kb", "anonymous_kb", "fds",
           "cpu_s", "reports", "cpu_us_per_report", "db_bytes", "wal_bytes", "ballot_rows", "rejection_rows",
           "mirror", "heard", "good_cache", "bad_cache", "rate_limited_addresses", "trusted_addresses",
           "rate_window", "tally_voters", "flood", "bluetoothd_restarts", "heap_in_use_kb", "heap_free_kb"]


class Sampler:
    def __init__(self, scenario, daemon, accel, csv):
        self.scenario, self.d, self.accel = scenario, daemon, accel
        self.rows, self.t0 = [], time.monotonic()
        self.prev = None
        self.csv = open(csv, "w")
        self.csv.write(",".join(COLUMNS) + "\n")
        self.flood, self.restarts = 0, 0

    def sample(self):
        pid = self.d.p.pid
        st = Proc.status(pid)
        stats = self.d.statistics()
        fp = stats.get("footprint", {})
        ing = fp.get("ingest", {})
        heap = stats.get("heap") or {}
        cpu = Proc.cpu(pid)
        reports = stats.get("reports")
        wall = time.monotonic() - self.t0
        per = None
        if self.prev and cpu is not None and reports is not None and self.prev[1] is not None:
            dr = reports - self.prev[1]
            if dr > 0:
                per = (cpu - self.prev[0]) / dr * 1e6
        self.prev = (cpu, reports)
        b, r, _ = store_rows(self.d.db)
        row = dict(scenario=self.scenario, wall_s=round(wall, 2), lecture_min=round(wall * self.accel / 60, 3),
                   question=stats.get("question"), rss_kb=st.get("VmRSS"), rss_anon_kb=st.get("RssAnon"),
                   anonymous_kb=Proc.anonymous(pid), fds=Proc.fds(pid), cpu_s=cpu, reports=reports,
                   cpu_us_per_report=None if per is None else round(per, 3), db_bytes=fsize(self.d.db),
                   wal_bytes=fsize(self.d.db + "-wal"), ballot_rows=b, rejection_rows=r,
                   mirror=stats.get("mirroredObjects"), heard=stats.get("heardAddresses"),
                   good_cache=ing.get("goodCache"), bad_cache=ing.get("badCache"),
                   rate_limited_addresses=ing.get("rateLimitedAddresses"), trusted_addresses=ing.get("trustedAddresses"),
                   rate_window=fp.get("rateWindow"), tally_voters=fp.get("tallyVoters"), flood=self.flood,
                   bluetoothd_restarts=self.restarts,
                   heap_in_use_kb=heap["inUse"] // 1024 if "inUse" in heap else None,
                   heap_free_kb=heap["free"] // 1024 if "free" in heap else None)
        self.rows.append(row)
        self.csv.write(",".join("" if row[c] is None else str(row[c]) for c in COLUMNS) + "\n")
        self.csv.flush()
        return row


class LoadGen:
    def __init__(self, a, env, payloads):
        self.a, self.env, self.payloads = a, env, payloads
        self.p, self.out, self.n = None, None, 0

    def start(self):
        self.n += 1
        self.out = os.path.join(self.env.work, f"loadgen-{self.n}.log")
        self.p = subprocess.Popen([self.a.loadgen, "--address", self.env.env["DBUS_SYSTEM_BUS_ADDRESS"],
                                   "--payloads", self.payloads, "--devices", str(self.a.voters),
                                   "--rate", str(self.a.rate), "--seconds", "100000"],
                                  stdin=subprocess.PIPE, stdout=open(self.out, "w"), stderr=subprocess.STDOUT)
        if not wait_for(lambda: "ready" in open(self.out).read(), 10):
            raise SystemExit("bluez-loadgen did not start: " + open(self.out).read())

    def reloaded(self):
        return len(re.findall(r"^reloaded ", open(self.out).read(), re.M))

    def reload(self):
        before = self.reloaded()
        self.p.send_signal(signal.SIGHUP)
        # Acknowledged (it re-reads between batches, once sending has started).
        started = "started" in open(self.out).read()
        return not started or wait_for(lambda: self.reloaded() > before, 5)

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
