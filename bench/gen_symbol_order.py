#!/usr/bin/env python3
"""Writes link/symbol-order.txt: the library's functions a client run executes.

    gen_symbol_order.py LIB CALLGRIND_OUT... > link/symbol-order.txt

LIB is the unstripped target/release/libtoolnexus.so the runs used;
CALLGRIND_OUT are `valgrind --tool=callgrind --demangle=no` outputs of
bench/c/bench_overhead runs against it (bench/gen_symbol_order.sh runs them).
The functions are listed in their address order in LIB, so functions the
compiler already placed together stay together. build.rs hands the file to
the linker (lld's --symbol-ordering-file) for release builds: the code one run
touches is then contiguous instead of spread over the whole .text, and the
pages the kernel maps around each fault are mostly pages the run uses
(bench/README.md, "Resident memory").
"""
import re
import subprocess
import sys


def executed(path, lib_name):
    obs, fns, out, ob = {}, {}, set(), None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, num, name = m.groups()
        table = obs if kind.endswith("ob") else fns
        if name:
            table[num] = name
        if kind == "ob":
            ob = obs.get(num)
        elif kind == "fn" and ob and lib_name in ob:
            out.add(fns[num])
    return out


def main():
    lib, outs = sys.argv[1], sys.argv[2:]
    names = set()
    for path in outs:
        names |= executed(path, "libtoolnexus")
    nm = subprocess.run(["nm", "--defined-only", lib], capture_output=True, text=True, check=True)
    addr = {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT" and parts[2] in names:
            addr.setdefault(parts[2], int(parts[0], 16))
    print("# Functions a client run executes (bench/gen_symbol_order.sh); build.rs")
    print("# passes this file to lld as --symbol-ordering-file for release builds.")
    for name in sorted(addr, key=addr.get):
        print(name)


if __name__ == "__main__":
    main()
