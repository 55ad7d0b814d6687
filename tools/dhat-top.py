#!/usr/bin/env python3
"""Where the bytes were at the heap's peak, from a dhat-heap.json (dhat-rs).

Usage: tools/dhat-top.py [dhat-heap.json] [--top N] [--match SUBSTRING]

Prints the bytes live at the peak (t-gmax) grouped three ways: by the innermost frame of this
crate (or the bench), by the innermost frame outside std/alloc/core/serde/dhat (the library that
asked), and the N heaviest call stacks (frames of std, core, alloc and dhat left out).
"""

import json
import re
import sys
from collections import Counter

NOISE = re.compile(
    r"^(alloc::|core::|std::|dhat::|<alloc::|<core::|<std::|<dhat::|__rust|hashbrown::raw|"
    r"<hashbrown::|hashbrown::|\[root\]|<T as alloc|<\[T\]|<&|<Q as|<Vec|<String|<Box|"
    r"<serde::|serde::|serde_core::|<serde_core::|tokio::runtime|<tokio::runtime|"
    r"<futures_util::|futures_util::|<core::pin|tracing::|<tracing)"
)
OURS = re.compile(r"blueprint_operator|schedules::")


def name(frame: str) -> str:
    # "0x55d1...: path::to::fn (file:line:col)" -> "path::to::fn"
    f = frame.split(": ", 1)[-1]
    f = re.sub(r" \(.*\)$", "", f)
    return re.sub(r"::h[0-9a-f]{16}$", "", f)


def main() -> None:
    args = sys.argv[1:]
    top = 15
    match = None
    path = "dhat-heap.json"
    while args:
        a = args.pop(0)
        if a == "--top":
            top = int(args.pop(0))
        elif a == "--match":
            match = args.pop(0)
        else:
            path = a
    d = json.load(open(path))
    frames = [name(f) for f in d["ftbl"]]
    total = sum(pp["gb"] for pp in d["pps"])
    blocks = sum(pp["gbk"] for pp in d["pps"])
    print(f"{path}: {total / 2**20:.1f} MiB in {blocks} blocks live at the peak (t-gmax)")
    ours: Counter = Counter()
    lib: Counter = Counter()
    stacks = []
    for pp in d["pps"]:
        if pp["gb"] == 0:
            continue
        fs = [frames[i] for i in pp["fs"]]
        kept = [f for f in fs if not NOISE.match(f)]
        if match and not any(match in f for f in kept):
            continue
        ours[next((f for f in fs if OURS.search(f)), "(none of ours)")] += pp["gb"]
        lib[kept[0] if kept else "(std only)"] += pp["gb"]
        stacks.append((pp["gb"], pp["gbk"], kept[:8]))

    def show(title: str, c: Counter) -> None:
        print(f"\n{title}")
        for f, b in c.most_common(top):
            print(f"  {b / 2**20:8.1f} MiB {100 * b / max(total, 1):5.1f}%  {f}")

    show("by the innermost frame of this crate:", ours)
    show("by the innermost frame outside std/serde/tokio:", lib)
    print(f"\nheaviest stacks (innermost first):")
    for b, k, fs in sorted(stacks, key=lambda s: -s[0])[:top]:
        print(f"  {b / 2**20:.1f} MiB in {k} blocks")
        for f in fs:
            print(f"      {f}")


if __name__ == "__main__":
    main()
