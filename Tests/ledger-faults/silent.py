"""A network that goes silent under a connection to the ledger (docs/LEDGER.md, "A network that goes
silent"): two `clicker-tally ledger watch` processes in a network namespace follow a poll over a veth
link; then a blackhole route drops everything the server sends them, and no error tells them so.

- The one with the default liveness settings (keepalives after 10 s of silence, a 20 s user timeout)
  says "the ledger cannot be read" within 30 s of the cut, and follows again once the link is back.
- The one whose URL turns keepalives and the user timeout off (`?keepalives=0&tcp_user_timeout=0`)
  says nothing for as long: with nothing to send, nothing tells it the server is gone.

Run by Tests/ledger-faults/run.sh (as root: it makes a network namespace)."""
import argparse
import subprocess
import threading
import time

from procs import Link, Postgres

CODE = "4821-K7QXM-3PF9A"
POLL = 7
BOUND = 30.0    # the default settings give up within this many seconds of the cut
CONTRAST = 15.0  # without keepalives, still silent this long after that

results = {"pass": 0, "fail": 0}


def check(ok, what):
    results["pass" if ok else "fail"] += 1
    print(("ok: " if ok else "FAILED: ") + what, flush=True)


class Watcher:
    """`ledger watch` in the namespace; each line it prints, with when it came."""

    def __init__(self, tally, link, url, name):
        self.name = name
        self.lines = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(["ip", "netns", "exec", link.ns, tally, "ledger", "watch", "--store", url,
                                      "--poll", str(POLL), "--duration", "300"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), line.rstrip("\n")))

    def first(self, text, after):
        """When a line holding `text` came after `after` (None: none yet)."""
        with self.lock:
            return next((t for t, line in self.lines if t >= after and text in line), None)

    def wait(self, text, after, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            t = self.first(text, after)
            if t is not None:
                return t
            time.sleep(0.05)
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tally", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    link = Link()
    pg = None
    watchers = []
    try:
        pg = Postgres(a.work, link.host, link.net, directory="pg-silent")
        subprocess.run([a.tally, "ledger", "open", "--store", pg.url(), "--join-code", CODE, "--poll", str(POLL)],
                       check=True, capture_output=True)
        url = pg.url(link.host)
        standard = Watcher(a.tally, link, url, "default settings")
        bare = Watcher(a.tally, link, url + "?keepalives=0&tcp_user_timeout=0", "keepalives off")
        watchers = [standard, bare]
        started = time.monotonic()
        for w in watchers:
            check(w.wait("no ballots yet", started, 30) is not None, f"{w.name}: follows the poll over the link")

        link.cut()
        cut = time.monotonic()
        print(f"the link is cut: the server's packets to {link.peer} are dropped", flush=True)
        said = standard.wait("the ledger cannot be read", cut, BOUND + 15)
        check(said is not None and said - cut <= BOUND,
              f"{standard.name}: says the ledger cannot be read {said - cut:.1f} s after the cut (bound {BOUND:.0f} s)"
              if said is not None else f"{standard.name}: silent {BOUND + 15:.0f} s after the cut")
        until = cut + max(BOUND, (said or cut) - cut) + CONTRAST
        time.sleep(max(0.0, until - time.monotonic()))
        other = bare.first("the ledger cannot be read", cut)
        check(other is None, f"{bare.name}: nothing said {until - cut:.1f} s after the cut"
              if other is None else f"{bare.name}: said the ledger cannot be read {other - cut:.1f} s after the cut")

        link.mend()
        mended = time.monotonic()
        back = standard.wait("no ballots yet", mended, 30)
        check(back is not None, f"{standard.name}: follows again {back - mended:.1f} s after the link is back"
              if back is not None else f"{standard.name}: not following 30 s after the link is back")
    finally:
        for w in watchers:
            w.stop()
        if pg is not None:
            try:
                pg.stop("immediate")
            except subprocess.CalledProcessError:
                pass
        link.close()
    print(f"ledger-silent: {results['pass']} passed, {results['fail']} failed", flush=True)
    return 1 if results["fail"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
