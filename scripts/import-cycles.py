#!/usr/bin/env python3
"""Reports import cycles between tinylet's modules (issue 18: "no import cycle").

Reads every src/**/*.rs outside tests (files named tests.rs and the `#[cfg(test)]` part
of a file), resolves each `crate::a::b` and `super::` path to the module it names, and
looks for cycles at two levels: between top-level modules (agent, model, uplink...) and
between the direct submodules of each top-level module (model::validate, uplink::node...).
Prints one line per cycle; exits 1 when there is one. Usage: scripts/import-cycles.py [SRC]
"""
import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")


def module_of(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def body(text):
    """The file's code: without its test module (everything from `#[cfg(test)]` +
    `mod`) and without comments (doc links name modules without importing them)."""
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    code = text[: m.start()] if m else text
    return re.sub(r"//[^\n]*", "", code)


def paths(text, here, is_mod_file):
    """Module paths (lists) that `text` refers to, `super::` resolved against `here`."""
    # `use a::{b, c::d}` groups: only the first segment chain matters for the edge.
    for m in re.finditer(r"\b((?:crate|super)(?:::(?:super|[a-z_][a-z0-9_]*))+)", text):
        segs = m.group(1).split("::")
        if segs[0] == "crate":
            yield segs[1:]
            continue
        # For a file a/b.rs the module is a::b and super is a; for a/b/mod.rs too.
        base = list(here)
        while segs and segs[0] == "super":
            base = base[:-1]
            segs = segs[1:]
        yield base + segs


def main():
    modules = {}
    for root, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs") or f == "tests.rs":
                continue
            full = os.path.join(root, f)
            rel = os.path.relpath(full, SRC)
            with open(full, encoding="utf-8") as fh:
                modules[tuple(module_of(rel))] = body(fh.read())
    known = set(modules)
    edges = {}
    for here, text in modules.items():
        for target in paths(text, list(here), False):
            # The longest known module prefix of the path.
            t = tuple(target)
            while t and t not in known:
                t = t[:-1]
            if not t or not here:
                continue
            for depth in (1, 2):
                a, b = here[:depth], t[:depth]
                if len(a) < depth or len(b) < depth or a == b:
                    continue
                if depth == 2 and a[0] != b[0]:
                    continue
                edges.setdefault(a, set()).add(b)
    cycles = find_cycles(edges)
    for c in cycles:
        names = {m: "::".join(m) for m in c}
        inside = [f"{names[a]} -> {names[b]}" for a in c for b in sorted(edges[a]) if b in names]
        print(f"cycle among {', '.join(names.values())}: {'; '.join(inside)}")
    return 1 if cycles else 0


def find_cycles(edges):
    """Strongly connected components of more than one module (Tarjan), as lists."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
