#!/usr/bin/env python3
"""Soak benchmark of the tally daemon and the voter: a lecture of hours, time accelerated.

Run through Tests/soak/run.sh (it builds the binaries and the bluetoothd stand-in). Scenarios:

  sim    `clicker-tally daemon --simulate N`: the simulated air and room inside the daemon; the room
         answers every question the daemon opens, changing answers at 10x the realistic rate
         (--simulate-churn); `clicker-tally next` every lecture/questions.
  dbus   `clicker-tally daemon` on the BlueZ backend, bluez-loadgen playing bluetoothd on a private
         bus with N devices advertising real sealed ballots (docs/vectors.py). Odd questions change
         answers at the realistic rate, even ones at 10x; discovery restarts; bluetoothd (the
         generator) restarted every 20 lecture minutes; a flood of forged ballots in the middle.
  voter  `clicker-vote --radio sim` against a daemon's simulated air: one process per question
         (state file shared), then one process taking many answer changes.

Every few seconds it samples the daemon (RSS, anonymous memory, fds, CPU, database and WAL sizes,
store row counts, and the daemon's own `--log-statistics` counters: mirror, remembered addresses,
caches, glibc's heap in use), writes CSV, draws PNG plots with gnuplot, prints the figures and checks the targets.
The last line is "soak: N passed, M failed"; the exit status is non-zero when a check failed.
Modules: room.py (the ballots), procs.py (processes, /proc, sampling), report.py (checks, plots).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

from procs import CODE, Daemon, Env, LoadGen, Proc, Sampler, fsize, wait_for
from report import CHECKS, analyse, check, median, plot, plot_voter, slope
from room import Room

MB = 1e6


def lecture(a, env, name, daemon, on_tick=None, events=()):
    """Runs the lecture clock: next question every period, samples, scenario events. Returns rows."""
    period = a.lecture_min * 60 / a.questions / a.accel
    s = Sampler(name, daemon, a.accel, os.path.join(a.out, f"soak-{name}.csv"))
    t0 = s.t0
    q, next_q = 1, period
    next_sample = 0.0
    pending = sorted(events)
    end = a.lecture_min * 60 / a.accel
    counted = []
    while True:
        now = time.monotonic() - t0
        if now >= end:
            break
        if on_tick:
            on_tick(now, q, s)
        while pending and pending[0][0] <= now:
            _, _, act = pending.pop(0)
            act(s)
        if now >= next_q and q < a.questions:
            counted.append((q, daemon.results(q)))
            if daemon.call("next") is None:
                print(f"  {name}: `clicker-tally next` failed at question {q}")
            q += 1
            next_q += period
        if now >= next_sample:
            s.sample()
            next_sample += a.sample_every
        time.sleep(0.05)
    counted.append((q, daemon.results(q)))
    s.sample()
    return s.rows, counted


def run_sim(a, env):
    print(f"\n== sim: daemon --simulate {a.voters} (simulated air and room in the daemon), {a.questions} questions, "
          f"{a.lecture_min:g} lecture minutes at x{a.accel:g}", flush=True)
    # Realistic: 15 % of 300 change once in a 4.5-minute question, ~0.17 changes/s; ten times that,
    # accelerated like the rest of the lecture.
    churn = max(0.1, 10 * 0.15 * a.voters / (a.lecture_min * 60 / a.questions) * a.accel)
    d = Daemon(env, "sim", ["--simulate", str(a.voters), "--simulate-speed", str(a.accel), "--simulate-churn",
                            f"{churn:.2f}", "--seed", "7", "--air", os.path.join(env.work, "sim-air.sock"),
                            "--discovery-restart", str(a.discovery_restart)])
    try:
        rows, counted = lecture(a, env, "sim", d)
    finally:
        d.stop()
    voters = [r["voters"] for _, r in counted if r]
    print(f"  voters counted per question: min {min(voters or [0])}, median {median(voters)}, "
          f"churn {churn:.1f} ballots/s")
    check("sim: every question counted most of the room", len(voters) == a.questions and min(voters) >= 0.8 * a.voters,
          f"{len(voters)} questions, fewest voters {min(voters or [0])} of {a.voters}")
    return analyse("sim", rows, a, a.voters, dbus=False)


def run_dbus(a, env):
    print(f"\n== dbus: daemon on the BlueZ backend, bluez-loadgen as bluetoothd ({a.voters} devices, {a.rate} signals/s), "
          f"{a.questions} questions, {a.lecture_min:g} lecture minutes at x{a.accel:g}", flush=True)
    room = Room(a.voters, CODE, 11)
    qsec = a.lecture_min * 60 / a.questions  # lecture seconds per question
    plans = {}
    current = [None] * a.voters  # what each device advertises: (q, seq, letter)
    payloads = os.path.join(env.work, "room.txt")
    flood = {"on": False}

    def write_room(qnow, tq):
        if qnow not in plans:
            plans[qnow] = room.plan(qnow, qsec, tenfold=qnow % 2 == 0)
        plan = plans[qnow]
        for i, ballots in enumerate(plan):
            for (t, seq, letter) in ballots:
                if t <= tq:
                    current[i] = (qnow, seq, letter)
        lines = [room.seal(i, *(current[i] or (0, 1, "A"))) for i in range(a.voters)]
        if flood["on"]:
            # Nine forged ballots for every real one, fresh guesses every tick.
            lines += [room.forged() for _ in range(9 * a.voters)]
        tmp = payloads + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, payloads)

    write_room(1, 0)
    gen = LoadGen(a, env, payloads)
    gen.start()
    d = Daemon(env, "dbus", ["--no-gatt-confirm", "--discovery-restart", str(a.discovery_restart)])
    tick = {"next": 0.0, "q": 1, "q0": 0.0, "acks": 0, "missed": 0}
    period = qsec / a.accel

    def on_tick(now, q, s):
        # The room answers on the lecture clock: question q began at (q - 1) x period, however long
        # the `results` and `next` calls before it took.
        if q != tick["q"]:
            tick["q"], tick["q0"] = q, (q - 1) * period
        if now >= tick["next"]:
            write_room(q, (now - tick["q0"]) * a.accel)
            if gen.reload():
                tick["acks"] += 1
            else:
                tick["missed"] += 1
            tick["next"] += a.tick

    def restart(s):
        gen.stop()
        gen.start()
        s.restarts += 1

    def flood_on(s):
        flood["on"] = True
        s.flood = 1

    def flood_off(s):
        flood["on"] = False
        s.flood = 0

    events = [(t * 60 / a.accel, i, restart) for i, t in
              enumerate(range(20, int(a.lecture_min), 20))]
    fstart = a.lecture_min / 2 * 60 / a.accel
    events += [(fstart, 100, flood_on), (fstart + a.flood_min * 60 / a.accel, 101, flood_off)]
    try:
        rows, counted = lecture(a, env, "dbus", d, on_tick, events)
        stats = d.statistics()
    finally:
        d.stop()
        gen.stop()
    # Every question counts exactly the room's final answers (all changes end by 60 % of the question).
    right, wrong = 0, []
    for q, r in counted:
        want = {}
        for ballots in plans.get(q, []):
            if ballots:
                want[ballots[-1][2]] = want.get(ballots[-1][2], 0) + 1
        got = {k: v for k, v in (r or {}).get("counts", {}).items() if v}
        if got == want:
            right += 1
            continue
        print(f"  question {q}: counted {got}, expected {want}")
        by_voter = {b["voter"]: b for b in (r or {}).get("ballots", [])}
        for i, ballots in enumerate(plans.get(q, [])):
            if not ballots:
                continue
            vid = "%08x" % room.ids[i]
            b = by_voter.get(vid)
            if b is None or b["sequence"] != ballots[-1][1] or b["answer"] != ballots[-1][2]:
                # The lecture second of each ballot, so a late last change shows as such.
                plan = [(round(t), seq, letter) for t, seq, letter in ballots]
                print(f"    voter {i} {vid}: counted {b and (b['sequence'], b['answer'])}, plan {plan} of {qsec:g} s")
                wrong.append(f"q{q} voter {vid} counted {b and (b['sequence'], b['answer'])}, room's last {plan[-1]}")
    # The failure line carries the first few voters (a long log's reader may see only that line).
    check("dbus: every question's counts equal the room's final answers", right == len(counted) == a.questions,
          f"{right} of {a.questions} questions exact" + (f"; {'; '.join(wrong[:3])}" if wrong else ""))
    acquisitions = stats.get("acquisitions")
    restarts = len([e for e in events if e[2] is restart])
    # More than one more than the restarts is not a failure by itself (a mirror read that came too early is
    # read again) but is named: it is also what the central losing its signal reader's stream would show.
    extra = (acquisitions or 0) - (restarts + 1)
    check("dbus: the daemon re-acquired bluetoothd after every restart", (acquisitions or 0) >= restarts + 1,
          f"{restarts} restarts, {acquisitions} acquisitions" + (f" ({extra} more than the restarts)" if extra > 0 else ""))
    check("dbus: every signal of the generator parsed, no report dropped",
          stats.get("rejectedSignals") == 0 and stats.get("droppedReports") == 0,
          f"rejected signals {stats.get('rejectedSignals')}, dropped reports {stats.get('droppedReports')}")
    check("dbus: every room update acknowledged by the generator", tick["missed"] == 0,
          f"{tick['acks']} updates, {tick['missed']} unacknowledged")
    rej = {}
    for _, r in counted:
        for k, v in (r or {}).get("rejected", {}).items():
            rej[k] = rej.get(k, 0) + v
    print(f"  rejections over the lecture: {rej}")
    check("dbus: the flood was rejected as forgeries", rej.get("badTag", 0) + rej.get("rateLimited", 0) > 0,
          f"badTag {rej.get('badTag', 0)}, rateLimited {rej.get('rateLimited', 0)}")
    return analyse("dbus", rows, a, a.voters, dbus=True)


def run_voter(a, env):
    print(f"\n== voter: clicker-vote --radio sim, one process per question for {a.questions} questions, "
          f"then one process taking {a.voter_changes} answer changes", flush=True)
    air = os.path.join(env.work, "voter-air.sock")
    d = Daemon(env, "voter", ["--simulate", "0", "--air", air, "--seed", "3"])
    vstate = os.path.join(env.work, "voter-state")
    venv = dict(env.env, XDG_STATE_HOME=vstate)
    seqfile = os.path.join(vstate, "clicker", "sequences")
    rows = []
    csv = open(os.path.join(a.out, "soak-voter.csv"), "w")
    csv.write("phase,question,changes,rss_kb,anonymous_kb,fds,state_bytes,state_lines\n")

    def sample(phase, q, k, pid):
        st = Proc.status(pid)
        size = fsize(seqfile)
        lines = len(open(seqfile).read().splitlines()) if size else 0
        r = dict(phase=phase, question=q, changes=k, rss_kb=st.get("VmRSS"), anonymous_kb=Proc.anonymous(pid),
                 fds=Proc.fds(pid), state_bytes=size, state_lines=lines)
        rows.append(r)
        csv.write(",".join(str(r[c]) for c in ["phase", "question", "changes", "rss_kb", "anonymous_kb", "fds",
                                               "state_bytes", "state_lines"]) + "\n")
        csv.flush()
        return r

    def voter(q, first):
        out = os.path.join(env.work, f"voter-{q}.log")
        p = subprocess.Popen([a.vote, "--radio", "sim", "--air", air, "--question", str(q), CODE, first],
                             env=venv, stdin=subprocess.PIPE, stdout=open(out, "w"), stderr=subprocess.STDOUT, text=True)
        return p, out

    def acked(out, n):
        return wait_for(lambda: len(re.findall(r"^(voting|changed to) ", open(out).read(), re.M)) >= n, 20)

    counted_right = 0
    letters = "ABCD"
    try:
        for q in range(1, a.questions + 1):
            if q > 1 and d.call("next") is None:
                print(f"  voter: next failed at question {q}")
            changes = 10 if q % 2 == 0 else 1
            p, out = voter(q, "A")
            ok = acked(out, 1)
            last = "A"
            for k in range(changes):
                last = letters[(k + 1) % 4]
                p.stdin.write(last + "\n")
                p.stdin.flush()
                ok = ok and acked(out, k + 2)
            # Counted by the tally with the last answer.
            good = wait_for(lambda: (d.results(q) or {}).get("counts", {}).get(last) == 1, 20, 0.2)
            counted_right += 1 if ok and good else 0
            sample("per-question", q, changes, p.pid)
            p.send_signal(signal.SIGTERM)
            p.wait(20)
        q = a.questions
        p, out = voter(q, "A")
        acked(out, 1)
        for k in range(1, a.voter_changes + 1):
            p.stdin.write(letters[k % 4] + "\n")
            p.stdin.flush()
            if k % max(1, a.voter_changes // 20) == 0:
                acked(out, k + 1)
                sample("long", q, k, p.pid)
        acked(out, a.voter_changes + 1)
        last = letters[a.voter_changes % 4]
        # Wait for what is checked: the last change itself, not an earlier ballot that happens to carry the same
        # answer while the tally is still a few changes behind (a flake under load).
        res = wait_for(lambda: next((b for b in (d.results(q) or {}).get("ballots", [])
                                     if b["answer"] == last and b["sequence"] >= a.voter_changes + 1), None), 20, 0.2)
        held = [(b["sequence"], b["answer"]) for b in (d.results(q) or {}).get("ballots", [])]
        p.send_signal(signal.SIGTERM)
        p.wait(20)
    finally:
        d.stop()
    per = [r for r in rows if r["phase"] == "per-question"]
    long_ = [r for r in rows if r["phase"] == "long"]
    check("voter: every question counted with the voter's last answer", counted_right == a.questions,
          f"{counted_right} of {a.questions}")
    st = per[-1]["state_bytes"] if per else 0
    check("voter: state file bounded (<= 256 entries, <= 8 KiB)", per and per[-1]["state_lines"] <= 256 and st <= 8192,
          f"{per[-1]['state_lines'] if per else 0} entries, {st} bytes after {a.questions} questions")
    rss = [r["rss_kb"] * 1024 / MB for r in per if r["rss_kb"]]
    print(f"  per-question voter RSS {min(rss):.1f}-{max(rss):.1f} MB")
    anon = [(r["question"], r["anonymous_kb"] * 1024 / MB) for r in per if r["anonymous_kb"]]
    qg = slope(anon) * (a.questions - 1)
    check(f"voter: memory does not grow with the questions (anonymous, fitted over {a.questions} questions, <= 0.5 MB)",
          len(anon) >= 3 and qg <= 0.5, f"{qg:+.2f} MB; RSS {min(rss):.1f}-{max(rss):.1f} MB, anonymous "
          f"{min(y for _, y in anon):.1f}-{max(y for _, y in anon):.1f} MB")
    half = [(r["changes"], r["rss_kb"] * 1024 / MB) for r in long_ if r["changes"] >= a.voter_changes / 2]
    g = slope(half) * a.voter_changes / 2
    check(f"voter: RSS flat over {a.voter_changes} answer changes (second half <= 0.5 MB)", abs(g) <= 0.5 and len(half) >= 3,
          f"{long_[0]['rss_kb'] / 1024 * 1.024:.1f} -> {long_[-1]['rss_kb'] / 1024 * 1.024:.1f} MB, fitted growth {g:+.2f} MB")
    check("voter: the last of the changes counted", res is not None and res["sequence"] >= a.voter_changes + 1,
          f"sequence {res['sequence']} answer {last}" if res else
          f"after 20 s the tally held {held} (the last change: sequence >= {a.voter_changes + 1}, answer {last})")
    return dict(rss_min=min(rss or [0]), rss_max=max(rss or [0]), state=st,
                long_start=long_[0]["rss_kb"] * 1024 / MB if long_ else 0,
                long_end=long_[-1]["rss_kb"] * 1024 / MB if long_ else 0, long_growth=g)


def main():
    sys.stdout.reconfigure(line_buffering=True)  # progress shows as it happens, also into a file
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--only", choices=["sim", "dbus", "voter"], action="append")
    ap.add_argument("--tally", required=True)
    ap.add_argument("--vote", required=True)
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--config", default="release")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--voters", type=int)
    ap.add_argument("--questions", type=int)
    ap.add_argument("--lecture-min", type=float)
    ap.add_argument("--accel", type=float)
    ap.add_argument("--replot", action="store_true")
    a = ap.parse_args()
    if a.short:
        d = dict(voters=300, questions=18, lecture_min=90, accel=60, growth_window=40, flood_min=5, voter_changes=300,
                 sample_every=1.0, cpu_start=5)
    else:
        d = dict(voters=300, questions=40, lecture_min=180, accel=30, growth_window=120, flood_min=5, voter_changes=2000,
                 sample_every=2.0, cpu_start=5)
    for k, v in d.items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    a.rate = 1500
    a.tick = 0.5 if a.short else 1.0   # wall seconds between room updates (D-Bus)
    a.discovery_restart = max(0.5, round(10 / a.accel, 2))  # every 10 lecture seconds, at most twice a wall second
    a.stats_every = 1
    os.makedirs(a.out, exist_ok=True)
    if a.replot:  # plots again from the CSV files in OUT (same parameters)
        for s in a.only or ["sim", "dbus"]:
            plot(a, s)
        plot_voter(a)
        return
    env = Env(a, a.work)
    env.start_bus()
    figures = {}
    t = time.monotonic()
    try:
        for s in a.only or ["sim", "dbus", "voter"]:
            figures[s] = {"sim": run_sim, "dbus": run_dbus, "voter": run_voter}[s](a, env)
            if s == "voter":
                plot_voter(a)
            else:
                plot(a, s)
    finally:
        env.stop()
    with open(os.path.join(a.out, "soak-figures.json"), "w") as f:
        json.dump(figures, f, indent=1, default=str)
    passed = sum(1 for c in CHECKS if c[1])
    failed = len(CHECKS) - passed
    print(f"\nsoak ({'short' if a.short else 'full'}, {a.config} build, {time.monotonic() - t:.0f} s wall): "
          f"CSV and plots in {a.out}")
    for name, ok, detail in CHECKS:
        if not ok:
            print(f"  failed: {name}: {detail}")
    print(f"soak: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
