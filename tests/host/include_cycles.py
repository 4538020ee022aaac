#!/usr/bin/env python3
"""Include cycles and layers of the host library.

Follows the quoted #include lines of src/ and groups foo.c with foo.h as one module. Fails
(exit 1, each problem printed) on a cycle of modules that involves host/, and on a host/ module
that includes one of a layer above its own (os < config < io < the opened device, host/ctx).
Cycles elsewhere in src/ are printed as notes. Usage: include_cycles.py SRC_DIR"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
HOST_LAYERS = {"host/os": 0, "host/config": 1, "host/io": 2, "host": 3}


def host_layer(module):
    """The layer of a host/ module (host/ctx is the top), or None outside host/."""
    if not module.startswith("host/"):
        return None
    return HOST_LAYERS.get(os.path.dirname(module))


def graph(src):
    """module -> set of modules its .c and .h include (only those under src/)."""
    deps = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            module = os.path.splitext(rel)[0]
            here = os.path.dirname(rel)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            out = deps.setdefault(module, set())
            for inc in INCLUDE.findall(text):
                for cand in (inc, os.path.normpath(os.path.join(here, inc))):
                    if os.path.isfile(os.path.join(src, cand)):
                        target = os.path.splitext(cand)[0]
                        if target != module:
                            out.add(target)
                        break
    return deps


def cycles(deps):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(deps):
        if start in index:
            continue
        work = [(start, iter(sorted(deps.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(deps.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def main():
    src = sys.argv[1]
    deps = graph(src)
    bad = 0
    for comp in cycles(deps):
        if any(m.startswith("host/") for m in comp):
            print("include cycle among: " + " ".join(comp))
            bad += 1
        else:
            print("note: include cycle outside host/: " + " ".join(comp))
    for module in sorted(deps):
        mine = host_layer(module)
        if mine is None:
            continue
        for target in sorted(deps[module]):
            theirs = host_layer(target)
            if theirs is not None and theirs > mine:
                print(f"{module} includes {target}, a layer above it")
                bad += 1
    print(f"{len(deps)} modules, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
