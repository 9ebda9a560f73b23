#!/usr/bin/env python3
"""Writes an ld.lld symbol-ordering file: the mangled names, in OBJECTS, of the functions
that LIST names, in LIST's order.

  order_file.py LIST OBJECT...   > ORDER        (a summary line goes to stderr)

LIST holds one function a line as rustc's v0 mangling demangles it, with the crates'
disambiguators left out (`<tinylet::agent::pleg::Pleg>::relist`): such a name stays the
same from one build to the next and from one target to another, while the mangled one
carries hashes of the build. A line starting with '#' is a comment. A C function's name
(musl's, compiler-rt's) is its symbol and goes to the output as it is. A Rust name of
LIST found in no object is skipped (the code changed since the list was made); the
summary says how many.
"""
import re
import subprocess
import sys

# `tinylet[5855a8496e57c46f]` -> `tinylet`: c++filt keeps the crate disambiguator.
DISAMBIGUATOR = re.compile(r"\[[0-9a-f]+\]")
C_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def wanted(path):
    names = []
    with open(path) as f:
        for line in f:
            # Only whole lines are comments: names hold '#' ({closure#0}).
            line = line.strip()
            if line and not line.startswith("#"):
                names.append(line)
    return names


def text_symbols(objects):
    """Mangled names of the functions defined in OBJECTS (nm types T, t, W)."""
    out = subprocess.run(
        ["nm", "--defined-only", "--format=posix", *objects],
        check=True, capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in ("T", "t", "W"):
            names.append(parts[0])
    return names


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names) + "\n",
                         check=True, capture_output=True, text=True).stdout
    return [DISAMBIGUATOR.sub("", d) for d in out.splitlines()]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    want = wanted(sys.argv[1])
    mangled = text_symbols(sys.argv[2:])
    by_name = {}
    for m, d in zip(mangled, demangle(mangled)):
        by_name.setdefault(d, []).append(m)
    found = 0
    for name in want:
        for m in by_name.get(name, ()):
            print(m)
        found += name in by_name
        # C functions (musl, compiler-rt) come from archives zig adds, not from
        # OBJECTS; their names are the symbols, so ld.lld can find them itself.
        if name not in by_name and C_NAME.fullmatch(name):
            print(name)
    print(f"{found} of {len(want)} listed functions found among "
          f"{len(mangled)}, laid out first", file=sys.stderr)


if __name__ == "__main__":
    main()
