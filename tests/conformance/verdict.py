#!/usr/bin/env python3
"""The verdict of a conformance run: reads RESULTS/specs.txt (summarize.py's PASS/FAIL per spec)
and RESULTS/summary.txt (each failure's message), counts the specs listed in EXPECTED (a spec
name, a tab, the reason) apart, prints passed and failed by group, each unexpected failure with
its message, and "N passed, N failed (N expected)". Writes RESULTS/verdict.txt too.
Exit 0 when no spec outside EXPECTED failed and some spec ran.
Usage: verdict.py RESULTS EXPECTED"""
import collections
import os
import re
import sys


def group(name):
    """The spec's group: its words after the [sig-x]/[k8s.io] tag up to the first that starts
    in lower case ("[sig-storage] Projected configMap should ..." -> "Projected")."""
    words = re.sub(r"^\[[^\]]*\]\s*", "", name).split()
    head = []
    for w in words:
        if not w[:1].isupper() and not w.startswith("["):
            break
        if w.startswith("["):
            continue
        head.append(w)
    return " ".join(head) or "(other)"


def main():
    results, expected_file = sys.argv[1], sys.argv[2]
    expected = {}
    for line in open(expected_file):
        if line.startswith("#") or "\t" not in line:
            continue
        name, why = line.rstrip("\n").split("\t", 1)
        expected[name] = why
    specs = []
    path = os.path.join(results, "specs.txt")
    if os.path.exists(path):
        specs = [l.rstrip("\n").split("\t", 1) for l in open(path) if "\t" in l]
    messages = {}
    summary = os.path.join(results, "summary.txt")
    if os.path.exists(summary):
        lines = open(summary, errors="replace").read().splitlines()
        for i, l in enumerate(lines):
            if l.startswith("FAIL: ") and i + 1 < len(lines):
                messages[l[6:]] = lines[i + 1].strip()
    by_group = collections.OrderedDict()
    for st, name in sorted(specs, key=lambda s: group(s[1])):
        g = by_group.setdefault(group(name), [0, 0, 0])
        g[0 if st == "PASS" else (2 if name in expected else 1)] += 1
    out = []
    out.append(f"{'group':<40} {'passed':>6} {'failed':>6} {'expected':>8}")
    for g, (p, f, e) in by_group.items():
        out.append(f"{g:<40} {p:>6} {f:>6} {e:>8}")
    passed = sum(1 for st, _ in specs if st == "PASS")
    exp = [n for st, n in specs if st == "FAIL" and n in expected]
    bad = [n for st, n in specs if st == "FAIL" and n not in expected]
    for n in exp:
        out.append(f"EXPECTED FAILURE: {n}\n      ({expected[n]})")
    for n in bad:
        out.append(f"FAIL: {n}\n      {messages.get(n, '(no message)')}")
    out.append(f"{passed} passed, {len(bad) + len(exp)} failed ({len(exp)} expected: "
               f"{len(bad)} unexpected) of {len(specs)} specs; results in {results}")
    text = "\n".join(out)
    print(text)
    with open(os.path.join(results, "verdict.txt"), "w") as o:
        o.write(text + "\n")
    sys.exit(0 if specs and not bad else 1)


main()
