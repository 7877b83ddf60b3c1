#!/usr/bin/env python3
"""Checks that every target of the package depends only on targets of its own layer or of the layers
before it, as docs/ARCHITECTURE.md's "Modules, in layers" lists them, and that every target of
Sources/ is in a layer. Exit status 1 with one line per fault."""
import json, re, subprocess, sys, os

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
text = open(os.path.join(root, "docs/ARCHITECTURE.md"), encoding="utf-8").read()
section = text.split("## Modules, in layers", 1)[1].split("\n## ", 1)[0]

layers = []  # [(name, {modules})]
for block in re.split(r"\n\*\*", section)[1:]:
    name = block.split("**", 1)[0]
    mods = set()
    for line in block.splitlines():
        if line.startswith("| `"):
            mods |= set(re.findall(r"`([^`]+)`", line.split("|")[1]))
    layers.append((name, mods))
test_only = set(re.findall(r"`([A-Za-z]+TestSupport)`", section))

dump = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=root, check=True,
                                 capture_output=True, text=True).stdout)
targets = {t["name"]: t for t in dump["targets"] if t["type"] in ("regular", "executable", "system")}
rank = {m: i for i, (_, mods) in enumerate(layers) for m in mods}

faults = []
for name, t in sorted(targets.items()):
    if name in test_only:
        continue
    if name not in rank:
        faults.append(f"{name}: in no layer of docs/ARCHITECTURE.md")
        continue
    for dep in t.get("dependencies", []):
        for kind, value in dep.items():
            d = value[0] if isinstance(value, list) else value
            if kind == "byName" or kind == "target":
                if d in targets and d not in test_only and rank.get(d, -1) > rank[name]:
                    faults.append(f"{name} ({layers[rank[name]][0]}) depends on {d} ({layers[rank[d]][0]}), a later layer")
for f in faults:
    print("layers:", f)
print(f"layers: {len(targets) - len(test_only)} targets in {len(layers)} layers, {len(faults)} faults")
sys.exit(1 if faults else 0)
