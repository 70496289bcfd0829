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
            # callgrind names a function's recursive activations `name'2`,
            # `name'3`…: the library's symbol is the name without that.
            out.add(re.sub(r"'\d+$", "", fns[num]))
    return out


# Code a native run executes that no callgrind run can show: valgrind 3.19
# does not implement pidfd_open (it answers ENOSYS), so under callgrind tokio
# reaps an MCP server's process through its SIGCHLD path, and natively through
# a pidfd registered with the I/O driver. Functions whose demangled name holds
# one of these are listed too (each was a 64 KB fault-around of cold code in
# a native run's page-fault trace).
NATIVE_ONLY = (
    "tokio::process::imp::pidfd_reaper",
    "tokio::runtime::io::driver::Handle::deregister_source",
    "tokio::runtime::io::registration::Registration::new_with_interest_and_handle",
)


def functions(lib):
    """(address, mangled name, demangled name) of each function of LIB."""
    def listing(*flags):
        out = subprocess.run(["nm", "--defined-only", *flags, lib], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        return [line.split(None, 2) for line in out]
    rows = []
    for plain, demangled in zip(listing(), listing("-C")):
        if len(plain) == 3 and len(demangled) == 3 and plain[1] in "tT" and plain[0] == demangled[0]:
            rows.append((int(plain[0], 16), plain[2], demangled[2]))
    return rows


def main():
    lib, outs = sys.argv[1], sys.argv[2:]
    names = set()
    for path in outs:
        names |= executed(path, "libtoolnexus")
    addr = {}
    for at, name, demangled in functions(lib):
        if name in names or any(p in demangled for p in NATIVE_ONLY):
            addr.setdefault(name, at)
    print("# Functions a client run executes (bench/gen_symbol_order.sh); build.rs")
    print("# passes this file to lld as --symbol-ordering-file for release builds.")
    for name in sorted(addr, key=addr.get):
        print(name)


if __name__ == "__main__":
    main()
