#!/usr/bin/python3
"""Offline model score: for every cell of the given tuner.md files, the pick of the model
(tutti-info --explain with that run's model as TUTTI_TUNE_FILE) against the measured forced
times of that run (one job and separate runs)."""
import os, re, subprocess, sys, tempfile
info = os.environ.get("INFO", "/work/main/build/bin/tutti-info")
verbose = os.environ.get("V")
def model_file(text):
    m = re.search(r"The model of every run[^:]*: (tutti-tune-table 1;[^\n]*)", text)
    parts = [p.strip().rstrip('.') for p in m.group(1).split(";")]
    lines = ["tutti-tune-table 1"]
    for p in parts[1:]:
        k, _, v = p.partition(" ")
        if k in ("origin",): continue
        lines.append(f"{k} {v}")
    f = tempfile.NamedTemporaryFile("w", suffix=".tune", delete=False)
    f.write("\n".join(lines) + "\n"); f.close()
    return f.name
def parse(text):
    one, sep = {}, {}
    part = None
    for line in text.splitlines():
        if line.startswith("## In one job"): part = one
        elif line.startswith("## Separate"): part = sep
        if part is None or not line.startswith("| ") or line.startswith("| collective") or line.startswith("|---"): continue
        c = [x.strip() for x in line.strip("|").split("|")]
        coll, n, b = c[0], int(c[1]), int(c[2])
        forced = c[-1].replace(",", " ").split()
        d = {forced[i]: float(forced[i + 1]) for i in range(0, len(forced) - 1, 2)}
        part[(coll, n, b)] = d
    return one, sep
cache = {}
def explain(tf, coll, b, n):
    key = (tf, coll, b, n)
    if key in cache: return cache[key]
    out = subprocess.run([info, "--explain", coll, str(b), str(n)], env=dict(os.environ, TUTTI_TUNE_FILE=tf),
                         capture_output=True, text=True).stdout
    pred, pick, f = {}, None, False
    for l in out.splitlines():
        if "candidate" in l and "predicted" in l: f = True; continue
        if f and l.startswith("  "):
            w = l.split()
            try: pred[w[0]] = float(w[1])
            except ValueError: pass
        if l.startswith("pick:"): pick = l.split()[1]; f = False
    cache[key] = (pred, pick)
    return pred, pick
tot = hit = 0
ratios = {}
for path in sys.argv[1:]:
    text = open(path).read()
    tf = model_file(text)
    one, sep = parse(text)
    for name, tab in (("one", one), ("sep", sep)):
        for (coll, n, b), d in sorted(tab.items()):
            pred, pick = explain(tf, coll, b, n)
            best = min(d, key=d.get)
            r = d.get(pick, float("nan")) / d[best]
            tot += 1; ok = r <= 1.10; hit += ok
            for a in d:
                if a in pred: ratios.setdefault((n, b >= 1 << 24, a), []).append(d[a] / pred[a])
            if verbose or not ok:
                print(f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)} {name} {coll} n={n} {b}: pick {pick} {r:.2f} best {best}"
                      + ("" if ok else "  MISS") + ("  pred " + " ".join(f"{a}:{pred[a]:.0f}/{d.get(a,0):.0f}" for a in pred) if verbose or not ok else ""))
print(f"model pick within 10%: {hit} of {tot} ({100*hit/tot:.0f}%)")
if os.environ.get("R"):
    for k in sorted(ratios):
        v = sorted(ratios[k]); print(k, f"measured/pred median {v[len(v)//2]:.2f} min {v[0]:.2f} max {v[-1]:.2f}")
