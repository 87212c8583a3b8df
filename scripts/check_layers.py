#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of src/, checked from the #include lines (run by make test).

    core/                                   nothing of ours
    http/ store/ json/ obs/ (and every      core/ only: never one another
      other component folder)
    api/                                    everything below
    src/*.c (main.c, manifest.c)            everything

A file may include headers of its own folder and of lower layers. An
include that goes up a layer, or sideways into another folder of the same
layer, fails the check with its file and line; so does any pair of folders
that include each other. Headers without a folder are the generated build
facts (hk_build.h), which every layer may read.

    scripts/check_layers.py [SRC_DIR]
"""
import os
import re
import sys

RANK = {"core": 0, "api": 2, "": 3}
COMPONENT = 1          # http, store, json, obs, and any new folder
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def folder_of(rel):
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else ""


def rank(folder):
    return RANK.get(folder, COMPONENT)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    src = os.path.normpath(src)
    problems = []
    edges = {}
    for d, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            me = folder_of(rel)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    if target.startswith("../") or target.startswith("./"):
                        problems.append(f"src/{rel}:{n}: relative include \"{target}\": name the folder")
                        continue
                    if "/" not in target:
                        continue   # generated build facts (hk_build.h)
                    them = folder_of(target)
                    if them == me:
                        continue
                    edges.setdefault((me, them), f"src/{rel}:{n}")
                    if rank(them) > rank(me):
                        problems.append(f"src/{rel}:{n}: includes \"{target}\": {them or 'main'}/ is a layer above "
                                        f"{me or 'main'}/")
                    elif rank(them) == rank(me):
                        problems.append(f"src/{rel}:{n}: includes \"{target}\": {them}/ and {me}/ are on the same "
                                        f"layer and must not depend on each other")
    for (a, b), where in sorted(edges.items()):
        if a < b and (b, a) in edges:
            problems.append(f"{a or 'main'}/ and {b or 'main'}/ include each other: {where} and {edges[(b, a)]}")
    for p in problems:
        print(p)
    print(f"layers: {len(problems)} problem(s) in {src}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
