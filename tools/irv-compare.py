#!/usr/bin/env python3
"""Compares clicker's instant-runoff counts with pyrankvote's, election by election.

    python3 tools/irv-compare.py ELECTIONS.json

ELECTIONS.json is written by ClickerTallyTests.InstantRunoffTests.testAgreesWithPyrankvote: a list
of {"options": n, "ballots": [[option index, ...], ...], "rounds": [{"votes": [n or null, ...],
"eliminated": i or null}, ...], "outcome": {"winner": i} | {"tie": [i, ...]} | {"none": true}}.

Each election is counted again with pyrankvote.instant_runoff_voting (its random tie-breaks seeded
per election). An election agrees when the winners are the same and every pyrankvote round has a
round of ours with the same options in the race and the same votes for each. pyrankvote may
eliminate several options in one round (all those that together cannot overtake the next one), so
its rounds are a subset of ours.

The rules differ on purpose in four places (Sources/ClickerTally/InstantRunoff.swift states ours);
an election that disagrees is put in the first class that explains it, and one that none explains is an error:
  odd-majority  ours ends when an option holds (n + 1) / 2 of an odd number n of active ballots,
                a majority; pyrankvote's test (votes - 1e-6 >= ceil(n / 2)) wants one vote more,
                so it eliminates further. The winner is the same.
  final-tie     ours ends in a tie (every option in the race has the same votes); pyrankvote
                eliminates all but one of them (by second choices, then at random, several at once
                when they cannot do better than tie) and elects one of the tied options.
  bottom-tie    before the first round that differs, ours broke a tie for the fewest votes (by
                earlier rounds, then the later letter); pyrankvote breaks it by second choices,
                then at random.
  group-equal   pyrankvote eliminated an option whose votes, with those of every option below it,
                equal the votes of the option above it (it eliminates when they cannot do better
                than tie); eliminating one option at a time can end otherwise.
Prints one line per class and exits 1 if any election is unexplained.
"""
import json
import random
import sys

from pyrankvote import Ballot, Candidate, instant_runoff_voting


def letters(n):
    return [Candidate(chr(65 + i)) for i in range(n)]


def py_rounds(options, ballots):
    """pyrankvote's rounds (votes of each option in the race at the round's start), its winners,
    and the options it rejected in each round."""
    cands = letters(options)
    result = instant_runoff_voting(cands, [Ballot([cands[i] for i in b]) for b in ballots])
    out = set()
    rounds = []
    rejected = []
    for rnd in result.rounds:
        in_race = {}
        rejected_now = set()
        for cr in rnd.candidate_results:
            i = ord(cr.candidate.name) - 65
            if i in out:
                continue
            in_race[i] = round(cr.number_of_votes)
            if cr.status == "Rejected":
                rejected_now.add(i)
        rounds.append(in_race)
        rejected.append(rejected_now)
        out |= rejected_now
    winners = sorted(ord(c.name) - 65 for c in result.get_winners())
    return rounds, winners, rejected


def ours(election):
    rounds = [{i: v for i, v in enumerate(r["votes"]) if v is not None} for r in election["rounds"]]
    o = election["outcome"]
    winners = [o["winner"]] if "winner" in o else []
    return rounds, winners, o


def bottom_tie(votes, eliminated):
    """Whether the option eliminated had as few votes as another option still in the race."""
    left = [v for v in votes.values()]
    return eliminated is not None and left.count(votes[eliminated]) > 1


def classify(election, py, mine):
    py_r, py_w, py_out = py
    my_r, my_w, outcome = mine
    unmatched = [j for j, r in enumerate(py_r) if not any(r == m for m in my_r)]
    if not unmatched and py_w == my_w:
        return "identical"
    last = my_r[-1]
    active = sum(last.values())
    if ("winner" in outcome and py_w == my_w and active % 2 == 1
            and 2 * last[my_w[0]] == active + 1):
        return "odd-majority"
    if "tie" in outcome and len(py_w) == 1 and py_w[0] in outcome["tie"]:
        return "final-tie"
    # The first pyrankvote round with no match has k options in the race: the difference comes
    # from an elimination made with more than k in the race.
    k = len(py_r[unmatched[0]]) if unmatched else 0
    for r, rnd in zip(my_r, election["rounds"]):
        if len(r) > k and bottom_tie(r, rnd["eliminated"]):
            return "bottom-tie"
    for j, rejected in enumerate(py_out):
        r = py_r[j]
        if len(r) <= k:
            continue
        for i in rejected:
            below = sum(v for c, v in r.items() if v <= r[i] and c != i) + r[i]
            above = [v for v in r.values() if v > r[i]]
            if above and below == min(above):
                return "group-equal"
    return "unexplained"


def main(path):
    with open(path) as f:
        elections = json.load(f)
    classes = {}
    examples = {}
    for n, e in enumerate(elections):
        random.seed(n)
        c = classify(e, py_rounds(e["options"], e["ballots"]), ours(e))
        classes[c] = classes.get(c, 0) + 1
        examples.setdefault(c, n)
    for c in ("identical", "odd-majority", "final-tie", "bottom-tie", "group-equal", "unexplained"):
        print(f"{c} {classes.get(c, 0)} example {examples.get(c, '-')}")
    return 1 if classes.get("unexplained") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
