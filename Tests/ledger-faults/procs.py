"""The processes of the fault suite and what it does to them: the PostgreSQL server (restarted),
the cut-off receiver's network namespace (cut and mended), the receivers (started, killed, started
again, stopped), and their journals (counted, saved, merged)."""
import os
import shutil
import signal
import socket
import sqlite3
import subprocess

class Postgres:
    """A private server from Debian's package (as PostgresTestServer does), its data kept across
    restarts. Listens on loopback and on the cut-off receiver's link."""

    def __init__(self, work, extra_host, extra_net, directory="pg"):
        majors = sorted((int(m) for m in os.listdir("/usr/lib/postgresql") if m.isdigit()), reverse=True)
        self.bin = next(f"/usr/lib/postgresql/{m}/bin" for m in majors
                        if os.path.exists(f"/usr/lib/postgresql/{m}/bin/pg_ctl"))
        self.dir = os.path.join(work, directory)
        os.makedirs(self.dir)
        self.run_as = []
        if os.getuid() == 0:
            import pwd
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.run_as = ["/usr/sbin/runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self.password = "ledger-faults"
        self._run(["/bin/sh", "-c", "umask 077 && printf %s \"$0\" > \"$1\"", self.password, self.dir + "/pw"])
        self._run([self.bin + "/initdb", "-D", self.dir + "/data", "-U", "clicker", "--pwfile=" + self.dir + "/pw",
                   "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"])
        self._run(["/bin/sh", "-c", f"echo 'host all all {extra_net} scram-sha-256' >> {self.dir}/data/pg_hba.conf"])
        # fsync off (the machine does not crash here; processes do); commits stay synchronous, so a
        # commit a receiver was told of survives an immediate stop.
        self.options = f"-p {self.port} -k {self.dir} -h 127.0.0.1,{extra_host} -F"
        self.start()
        self._run([self.bin + "/psql", "-X", "-q", "-h", self.dir, "-p", str(self.port), "-U", "clicker", "-d", "postgres",
                   "-c", "CREATE DATABASE ledger"])

    def _run(self, command):
        subprocess.run(self.run_as + ["/usr/bin/env", "-C", "/"] + command, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def url(self, host="127.0.0.1"):
        return f"postgres://clicker:{self.password}@{host}:{self.port}/ledger"

    def start(self):
        self._run([self.bin + "/pg_ctl", "-D", self.dir + "/data", "-l", self.dir + "/log", "-w", "-t", "30",
                   "-o", self.options, "start"])

    def stop(self, mode):
        self._run([self.bin + "/pg_ctl", "-D", self.dir + "/data", "-m", mode, "-w", "stop"])

    def query(self, sql):
        out = subprocess.run(self.run_as + ["/usr/bin/env", "-C", "/", self.bin + "/psql", "-X", "-A", "-t", "-F", " ",
                                            "-h", self.dir, "-p", str(self.port), "-U", "clicker", "-d", "ledger", "-c", sql],
                             check=True, capture_output=True, text=True).stdout
        return [line.split() for line in out.splitlines() if line.strip()]


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Link:
    """The cut-off receiver's network: a namespace of its own, joined to this one by a veth pair.
    The cut is a blackhole route, here, to the receiver's address: what the receiver sends reaches
    the server, nothing comes back, and no error tells it so (a cable cut beyond the switch)."""

    def __init__(self):
        n = os.getpid() % 250 + 1
        self.ns = f"clicker-lf-{os.getpid()}"
        self.outer, self.inner = f"lfa{os.getpid() % 100000}", f"lfb{os.getpid() % 100000}"
        self.host, self.peer, self.net = f"10.231.{n}.1", f"10.231.{n}.2", f"10.231.{n}.0/30"
        for c in (["ip", "netns", "add", self.ns],
                  ["ip", "link", "add", self.outer, "type", "veth", "peer", "name", self.inner],
                  ["ip", "link", "set", self.inner, "netns", self.ns],
                  ["ip", "addr", "add", self.host + "/30", "dev", self.outer],
                  ["ip", "link", "set", self.outer, "up"],
                  ["ip", "netns", "exec", self.ns, "ip", "addr", "add", self.peer + "/30", "dev", self.inner],
                  ["ip", "netns", "exec", self.ns, "ip", "link", "set", self.inner, "up"],
                  ["ip", "netns", "exec", self.ns, "ip", "link", "set", "lo", "up"]):
            subprocess.run(c, check=True, capture_output=True)

    def cut(self):
        subprocess.run(["ip", "route", "add", "blackhole", self.peer + "/32"], check=True)

    def mend(self):
        subprocess.run(["ip", "route", "del", "blackhole", self.peer + "/32"], check=True)

    def close(self):
        subprocess.run(["ip", "route", "del", "blackhole", self.peer + "/32"], capture_output=True)
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


class Receiver:
    def __init__(self, k, tally, token, code, work, prefix=()):
        self.k, self.tally, self.token, self.code, self.prefix = k, tally, token, code, list(prefix)
        self.air = os.path.join(work, f"air{k}.sock")
        self.journal = os.path.join(work, f"journal{k}.sqlite")
        self.log = open(os.path.join(work, f"receiver{k}.log"), "ab")
        self.env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": work, "XDG_RUNTIME_DIR": work, "XDG_STATE_HOME": work}
        self.proc = None
        self.starts = 0
        self.kills = 0
        self.retry_at = 0.0
        self.hearing_since = None

    def start(self):
        self.hearing_since = None
        self.proc = subprocess.Popen(self.prefix + [self.tally, "receiver", "--radio", "sim", "--air", self.air,
                                                    "--seed", str(self.k + 1), "--store", self.token,
                                                    "--join-code", self.code, "--journal", self.journal],
                                     stdout=self.log, stderr=self.log, env=self.env)
        self.starts += 1

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def hearing_for(self, now):
        """How long the receiver has been hearing: its air takes voters once it has joined the
        poll (a receiver started again needs the database for that, and takes seconds to start on a
        loaded machine). 0 while it is not."""
        if not self.running():
            return 0.0
        if self.hearing_since is None:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.setblocking(False)  # a full backlog (its voters joining at once) is "not yet"
            try:
                probe.connect(self.air)
                self.hearing_since = now
            except OSError:
                return 0.0
            finally:
                probe.close()
        return now - self.hearing_since

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    def supervise(self, now):
        """Starts the receiver again when it ended, as a service manager would. Only a kill ends one:
        a receiver started while the database is down waits for it (it learns its poll there)."""
        if self.proc is not None and self.proc.poll() is not None:
            if self.retry_at == 0.0:
                self.retry_at = now + 0.5
            elif now >= self.retry_at:
                self.retry_at = 0.0
                self.start()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "hung"


def journal_rows(path):
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT count(*) FROM journal").fetchone()[0]
    finally:
        db.close()


def snapshot(path, dest):
    """A consistent copy of a live journal (SQLite's backup), to be replayed later."""
    src, dst = sqlite3.connect(path), sqlite3.connect(dest)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return journal_rows(dest)


def merge(paths, dest):
    """One journal holding the rows of every journal in `paths`; returns how many."""
    shutil.copyfile(paths[0], dest)
    db = sqlite3.connect(dest)
    try:
        for k, path in enumerate(paths[1:]):
            db.execute(f"ATTACH DATABASE ? AS j{k}", (path,))
            db.execute("INSERT INTO journal (poll, question, mode, voter, sequence, answer, verified, heard_at, address) "
                       f"SELECT poll, question, mode, voter, sequence, answer, verified, heard_at, address FROM j{k}.journal")
            db.commit()
            db.execute(f"DETACH DATABASE j{k}")
        return db.execute("SELECT count(*) FROM journal").fetchone()[0]
    finally:
        db.close()
