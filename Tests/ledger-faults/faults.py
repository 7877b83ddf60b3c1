"""Receivers as separate processes counting one poll into one PostgreSQL ledger, under faults:
receivers killed with SIGKILL and started again on the same journal, the database restarted, one
receiver cut off from the database for 30 s, and ballots delivered twice and out of order. At the
end every receiver's journal is empty and the ledger holds, per voter and question, the ballot one
receiver hearing everything would count (each voter's last ballot: the poll's latest answer wins).

Run by Tests/ledger-faults/run.sh (as root: it makes a network namespace)."""
import argparse
import os
import random
import shutil
import subprocess
import threading
import time

from hall import Hall
from procs import Link, Postgres, Receiver, journal_rows, merge, snapshot

CODE = "4821-K7QXM-3PF9A"
POLL = 41
QUESTIONS = 3
PHASE = 35.0          # seconds each question is answered
SETTLE = 15.0         # a voter's last ballot is shown at least this long before the next question
KILLS = 20
DB_RESTARTS = 5
CUT = 30.0
ROWS, SEATS = 20, 15
POSITIONS = [2, 10, 17]   # receiver k sits at this row; the last is the one cut off
REACH = 6
CUT_RECEIVER = 2

results = {"pass": 0, "fail": 0}


def check(ok, what):
    results["pass" if ok else "fail"] += 1
    print(("ok: " if ok else "FAILED: ") + what, flush=True)


def log(t0, text):
    print(f"[{time.monotonic() - t0:6.1f}s] {text}", flush=True)


def plan(rng, n):
    """Each voter's ballots per question: [(time, question, sequence, letter)], the last one
    shown at least SETTLE seconds before the question changes."""
    events = []
    for q in range(1, QUESTIONS + 1):
        start = (q - 1) * PHASE
        for i in range(n):
            t = start + rng.uniform(0.5, 8)
            seq = 1
            events.append((t, i, q, seq, rng.choice("ABCD")))
            for _ in range(rng.choice([0, 0, 1, 1, 2])):
                t = rng.uniform(t, start + PHASE - SETTLE)
                seq += 1
                events.append((t, i, q, seq, rng.choice("ABCD")))
    events.sort()
    return events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tally", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, required=True)
    a = ap.parse_args()
    work = a.work
    rng = random.Random(a.seed)
    os.chmod(work, 0o711)  # the server's user reaches its directory inside

    link = Link()
    pg = None
    receivers = []
    try:
        pg = Postgres(work, link.host, link.net)
        qfile = os.path.join(work, "questions.yaml")
        with open(qfile, "w") as f:
            f.write("questions:\n" + "".join(f"  - title: Question {q}\n    kind: single\n    options: [A, B, C, D]\n"
                                             for q in range(1, QUESTIONS + 1)))

        def token():
            out = subprocess.run([a.tally, "ledger", "open", "--store", pg.url(), "--join-code", CODE, "--poll", str(POLL),
                                  "--questions", qfile], check=True, capture_output=True, text=True).stdout
            return out.split()[0]

        for k in range(len(POSITIONS)):
            t = token()
            prefix = ()
            if k == CUT_RECEIVER:
                t = t.replace("@127.0.0.1:", f"@{link.host}:")
                prefix = ("ip", "netns", "exec", link.ns)
            receivers.append(Receiver(k, a.tally, t, CODE, work, prefix))
        replay_token = token()

        hall = Hall(CODE, ROWS, SEATS, POSITIONS, REACH, [r.air for r in receivers], a.seed)
        n = len(hall.voters)
        heard = [len(hall.heard_by(i)) for i in range(n)]
        print(f"{n} voters; heard by one receiver: {heard.count(1)}, two: {heard.count(2)}, three: {heard.count(3)}; "
              f"only the cut-off receiver hears {sum(1 for i in range(n) if hall.heard_by(i) == [CUT_RECEIVER])}", flush=True)
        events = plan(rng, n)
        final = {}
        for (_, i, q, seq, letter) in events:
            final[(q, hall.voters[i][1])] = (seq, letter)
        voting = QUESTIONS * PHASE

        # The faults, seeded. The cut (from 45 s, or once the receiver hears again if it is
        # starting then) spans the change from question 2 to 3; one kill of the
        # cut-off receiver falls inside it, after the change, when its journal holds question 2's
        # last ballots that no voter shows any more. No other kill of that receiver falls inside
        # the cut: started again, a receiver needs the database to learn its poll, so it would be
        # deaf for the rest of the cut, and ballots of the voters only it hears would be on the
        # air with nobody listening (unheard, not lost).
        cut_at = PHASE + PHASE / 2
        forced_kill = 2 * PHASE + 2
        kills = [(forced_kill, CUT_RECEIVER)]
        others = [k for k in range(len(receivers)) if k != CUT_RECEIVER]
        for _ in range(KILLS - 1):
            at, k = rng.uniform(2, voting - 2), rng.randrange(len(receivers))
            if k == CUT_RECEIVER and cut_at <= at <= cut_at + CUT:
                k = rng.choice(others)
            kills.append((at, k))
        kills.sort()
        restarts = []  # (when, how long the server stays down)
        for t in sorted(rng.uniform(3, voting - 6 * DB_RESTARTS) for _ in range(DB_RESTARTS)):
            # one outage (up to 3 s) at a time
            restarts.append((max(t, restarts[-1][0] + 6) if restarts else t, rng.uniform(1.5, 3)))

        for r in receivers:
            r.start()
        t0 = time.monotonic()
        deadline = t0 + 30
        while not all(os.path.exists(r.air) for r in receivers):
            if time.monotonic() > deadline:
                raise RuntimeError("the receivers did not open their air")
            time.sleep(0.05)

        stats = {"kills": 0, "db": 0, "cut": 0}
        snapshots = []
        faults_lock = threading.Lock()

        def database_restarts():
            for k, (at, down) in enumerate(restarts):
                time.sleep(max(0, t0 + at - time.monotonic()))
                mode = "immediate" if k % 2 == 0 else "fast"
                pg.stop(mode)
                log(t0, f"database stopped ({mode})")
                time.sleep(1.5)
                if k == 0:  # the journals hold what the ledger could not take: kept for a replay
                    for r in receivers:
                        dest = os.path.join(work, f"replay-{r.k}.sqlite")
                        snapshots.append((dest, snapshot(r.journal, dest)))
                time.sleep(down - 1.5)
                pg.start()
                log(t0, "database started again")
                with faults_lock:
                    stats["db"] += 1

        restarter = threading.Thread(target=database_restarts)
        restarter.start()
        pending_kills = list(kills)
        cut = None  # [start, end, snapshot taken]
        killed_in_cut = False
        e = 0
        while True:
            now = time.monotonic() - t0
            while e < len(events) and events[e][0] <= now:
                _, i, q, seq, letter = events[e]
                hall.show(i, hall.seal(i, q, seq, letter))
                e += 1
            # The cut begins once the receiver hears (it may be starting again after a kill).
            if cut is None and now >= cut_at and receivers[CUT_RECEIVER].hearing_for(now) > 0:
                link.cut()
                cut = [now, now + CUT, False]
                log(t0, f"receiver {CUT_RECEIVER} cut off from the database")
            if cut is not None and not cut[2] and now >= cut[1] - 5:
                dest = os.path.join(work, "replay-cut.sqlite")
                snapshots.append((dest, snapshot(receivers[CUT_RECEIVER].journal, dest)))
                cut[2] = True
            if cut is not None and now >= cut[1] and not stats["cut"]:
                link.mend()
                stats["cut"] = 1
                log(t0, f"receiver {CUT_RECEIVER} reaches the database again")
            # A kill falls on a receiver that has been hearing for a second at least: one that is
            # still starting is not killed again before it has heard anything.
            for kill in [x for x in pending_kills if x[0] <= now]:
                at, k = kill
                r = receivers[k]
                if r.hearing_for(now) >= 1.0:
                    if k == CUT_RECEIVER and at == forced_kill:
                        killed_in_cut = cut is not None and cut[0] <= now < cut[1] and now >= 2 * PHASE
                    r.kill9()
                    stats["kills"] += 1
                    pending_kills.remove(kill)
                    log(t0, f"receiver {k} killed (SIGKILL), kill {stats['kills']}")
            for r in receivers:
                r.supervise(now)
            if now > voting + SETTLE and not pending_kills and stats["cut"]:
                break
            time.sleep(0.02)
        restarter.join()
        # Every receiver up, the database up and reachable: a last stretch of hearing and shipping.
        # (until each has been hearing for 3 s at least: a receiver still starting has no handler for
        # SIGTERM yet)
        settle_end = time.monotonic() + SETTLE
        while time.monotonic() < settle_end or min(r.hearing_for(time.monotonic() - t0) for r in receivers) < 3:
            for r in receivers:
                r.supervise(time.monotonic() - t0)
            time.sleep(0.05)
        log(t0, "stopping the receivers (SIGTERM)")
        hall.close()
        statuses = [r.stop() for r in receivers]
        print("receiver starts: " + ", ".join(f"{r.k}: {r.starts}" for r in receivers), flush=True)

        # Replays: the saved journals, together, shipped twice, late, by a receiver of its own.
        saved = os.path.join(work, "replay.sqlite")
        replayed = merge([path for path, _ in snapshots], saved)
        for again in range(2):
            copy = f"{saved}.{again}"
            shutil.copyfile(saved, copy)
            p = subprocess.run([a.tally, "receiver", "--radio", "sim", "--air", os.path.join(work, "replay.sock"),
                                "--store", replay_token, "--join-code", CODE, "--journal", copy, "--duration", "1"],
                               capture_output=True, text=True, env=receivers[0].env)
            check(p.returncode == 0 and journal_rows(copy) == 0,
                  f"replay {again + 1} of the saved journals ({replayed} ballots): shipped, exit {p.returncode}")
        log(t0, f"replayed {replayed} journaled ballots twice")
        refused = hall.refusals()
        check(not refused, f"the receivers' airs refused {len(refused)} requests of the voters' devices {refused[:3]}")

        check(stats["kills"] == KILLS, f"{stats['kills']} receivers killed with SIGKILL and started again (of {KILLS})")
        check(stats["db"] == DB_RESTARTS, f"database restarted {stats['db']} times (of {DB_RESTARTS})")
        check(stats["cut"] == 1 and killed_in_cut,
              f"receiver {CUT_RECEIVER} cut off from the database for {CUT:.0f} s, and killed during the cut after "
              f"question {QUESTIONS} opened")
        check(replayed > 0, f"{replayed} ballots delivered again, late, from saved journals")
        waited = sum(open(r.log.name, "rb").read().count(b"the ledger does not answer") for r in receivers)
        check(all(r.starts == 1 + r.kills for r in receivers),
              "no receiver ended but by a kill (starts " + ", ".join(f"{r.k}: {r.starts} for {r.kills} kills" for r in receivers)
              + f"); those started while the database was down waited for it ({waited} tries refused meanwhile)")
        for r, s in zip(receivers, statuses):
            rows = journal_rows(r.journal)
            check(s == 0 and rows == 0, f"receiver {r.k} stopped with status {s}, {rows} ballots left in its journal")

        index = {vid: i for i, (_, vid) in enumerate(hall.voters)}

        def seat(v):
            i = index[v]
            return f"row {hall.voters[i][0]}, heard by receivers {hall.heard_by(i)}"

        ledger = {}
        doubles = 0
        for q, voter, seq, answer in pg.query(
                f"SELECT question, voter_id, sequence, encode(answer, 'hex') FROM ballots WHERE poll_id = {POLL}"):
            key = (int(q), int(voter))
            doubles += key in ledger
            ledger[key] = (int(seq), answer)
        counts = {(int(q), ans): int(c) for q, ans, c in pg.query(
            f"SELECT question, encode(answer, 'hex'), count(*) FROM ballots WHERE poll_id = {POLL} GROUP BY 1, 2")}
        for q in range(1, QUESTIONS + 1):
            want = {v: (s, hall.v.answer_bytes(l).hex()) for (qq, v), (s, l) in final.items() if qq == q}
            got = {v: b for (qq, v), b in ledger.items() if qq == q}
            lost = sorted(set(want) - set(got))
            extra = sorted(set(got) - set(want))
            wrong = sorted(v for v in want if v in got and got[v] != want[v])
            for v in lost[:10]:
                print(f"  lost: question {q} voter {v} ({seat(v)}): last ballot (sequence, answer) {want[v]}", flush=True)
            for v in wrong[:10]:
                print(f"  wrong: question {q} voter {v} ({seat(v)}): ledger {got[v]}, last ballot {want[v]}", flush=True)
            for v in extra[:10]:
                print(f"  not a voter: question {q} voter {v}: {got[v]}", flush=True)
            check(not lost and not wrong and not extra,
                  f"question {q}: {len(got)} ballots in the ledger, {len(want)} voters; {len(lost)} lost, "
                  f"{len(wrong)} not the voter's last ballot, {len(extra)} of nobody")
            want_counts = {}
            for s, ans in want.values():
                want_counts[ans] = want_counts.get(ans, 0) + 1
            got_counts = {ans: c for (qq, ans), c in counts.items() if qq == q}
            check(got_counts == want_counts and sum(got_counts.values()) == len(want),
                  f"question {q}: counts {dict(sorted(got_counts.items()))}, one tally of every ballot "
                  f"{dict(sorted(want_counts.items()))} (counted twice: {sum(got_counts.values()) - len(want)})")
        check(doubles == 0, f"{doubles} voters with two counted ballots for one question")
    finally:
        for r in receivers:
            if r.running():
                r.proc.kill()
        if pg is not None:
            try:
                pg.stop("immediate")
            except subprocess.CalledProcessError:
                pass
        link.close()
    print(f"ledger-faults: {results['pass']} passed, {results['fail']} failed", flush=True)
    return 1 if results["fail"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
