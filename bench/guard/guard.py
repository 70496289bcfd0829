#!/usr/bin/env python3
"""The perf guard (issue 31): instruction counts of the headline rows, the
loop's peak resident memory and the freshness of link/symbol-order.txt,
against bench/guard/baseline.json.

    bench/guard/guard.py                 measure, compare, exit 1 on a regression
    bench/guard/guard.py --update WHY    measure and write the baseline (commit it
                                         with the change that moved it, WHY saying why)
    bench/guard/guard.py --selftest      check the comparison rules on made-up figures

Instructions (callgrind) repeat from run to run on a shared, loaded machine
where wall time does not, so a row that grows by more than its tolerance
(5%) is a change in the code, not noise. Each row counts one fixed workload
of the release build:

  build_1000_skills   whole process: load, build a toolkit of 1,000 generated
                      skills, free, exit (bench/c/bench_skills.c `rss` mode)
  first_render_1000   the first tn_render (openai) of a fresh toolkit of 1,000
                      declared HTTP tools, per render (guard_host.c render)
  execute_skill       tn_execute of `skill` on that skills toolkit, per call
  translate_conversion  one conversion, 20 messages and 20 tools, Anthropic
                      style (benches/translate_workload through the
                      guard_translate binary: 1,100 minus 100 conversions,
                      over 1,000)
  translate_gemini_request, translate_responses_request
                      the same workload's request alone as a Gemini /
                      a Responses body (guard_translate N STYLE: 550
                      minus 50, over 500)
  run_overhead        the host process per tn_run of the overhead scenario
                      (bench/c/bench_overhead.c: 2 model round trips, 2 MCP
                      tool calls; 60 minus 10 runs, over 50)
  serve_stdio_read    `toolnexus serve --stdio` per tools/call of the builtin
                      `read` (250 minus 50 calls, over 200; the smaller of
                      two such measurements: the server's threads park and
                      wake with the machine's load, which moves its count)
  cold_start          whole process: load, build builtins + examples/skills,
                      render, exit (bench/c/bench_cold.c)
  agent_turn          the agent runtime per turn of one model call on an
                      in-process model (guard_host.c agents; 60 minus 10
                      turns, over 50)
  loop_init           the overhead scenario's init: tn_toolkit_build with its
                      stdio MCP server (start, initialize, tools/list) and
                      tn_client_new, with the render and frees that check
                      and end it (guard_host.c init; 6 minus 1 inits, over 5:
                      the first init's one-time work cancels out)

and one memory row, `loop_peak_rss_kb`: the peak resident set of the
overhead scenario's process (20 runs), the smallest of three, with its own
tolerance. The symbol order is stale when more than 5% of the names it lists
are missing from the library, or more than 5% of the library functions the
overhead scenario executes are not listed (bench/gen_symbol_order.sh
regenerates it).

Two start-up checks (bench/README.md, "Cold start without libgcc_s"): the
shared library does not load libgcc_s.so.1 (link/cc-order links the unwinder
in) when the C compiler has libgcc_eh.a, and the cold start runs no CPU
feature probe of std's (`detect_and_initialize`, about ten CPUID traps on a
virtual machine).
"""
import concurrent.futures
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BASELINE = os.path.join(HERE, "baseline.json")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gen_symbol_order  # noqa: E402 - bench/ is put on the path just above
TOLERANCE_PCT = 5.0
RSS_TOLERANCE_PCT = 10.0
STALE_PCT = 5.0
# Rows printed but never failing (none now). The loop's peak RSS was one
# while the symbol order's names did not travel between checkouts (a clean
# clone read 8.3 MB against 6.1-6.2 MB in the generating one, CI45);
# link/cc-order matches them to each build's at link time, and a clean clone
# reads 6,080 kB (CI47), so the row fails like the others.
REPORT_ONLY = []

# --------------------------------------------------------------------------
# The comparison (pure; --selftest checks it).


def compare(baseline, measured):
    """Returns (lines, failures): a table of every row and the list of the
    rows that fail, each with its reason."""
    lines, failures = [], []
    rows = baseline.get("rows", {})
    tolerances = baseline.get("tolerance_pct", {})
    report_only = set(baseline.get("report_only", []))
    for name in sorted(set(rows) | set(measured)):
        base, now = rows.get(name), measured.get(name)
        if base is None:
            lines.append(f"{name:22s} {'-':>14s} {now:>14,d}   new row (not in the baseline)")
            failures.append(f"{name}: not in bench/guard/baseline.json (run --update)")
            continue
        if now is None:
            lines.append(f"{name:22s} {base:>14,d} {'-':>14s}   not measured")
            failures.append(f"{name}: in the baseline but not measured")
            continue
        tol = float(tolerances.get(name, TOLERANCE_PCT))
        change = (now - base) * 100.0 / base if base else 0.0
        verdict = "ok"
        if change > tol and name in report_only:
            verdict = f"over +{tol:g}% (reported only: see report_only in the baseline)"
        elif change > tol:
            verdict = f"REGRESSION (over +{tol:g}%)"
            failures.append(f"{name}: {base:,d} -> {now:,d} ({change:+.2f}%, tolerance +{tol:g}%)")
        elif change < -tol:
            verdict = "faster: update the baseline (--update) to keep the gain"
        lines.append(f"{name:22s} {base:>14,d} {now:>14,d} {change:+7.2f}%  {verdict}")
    return lines, failures


# What in a mangled name depends on where the crate was built rather than
# on the code: the crate disambiguators of v0 names (`Cs<hash>_`: cargo's
# metadata hash covers a path package's directory) and the `.llvm.<hash>`
# suffix thin LTO gives a promoted local symbol.
_BUILD_PARTS = re.compile(r"Cs[0-9A-Za-z]+_|\.llvm\.\d+$")


def normalized(name):
    return _BUILD_PARTS.sub("", name)


def stale_order(listed, present, executed):
    """Returns the failures of the symbol-order check: `listed` names of
    link/symbol-order.txt, `present` function names of the library,
    `executed` library functions a loop run executes. Names are compared
    without their build-place parts (see `normalized`): the check is about
    code the list no longer names, not about the directory it was built in."""
    listed = [normalized(n) for n in listed]
    present = {normalized(n) for n in present}
    executed = {normalized(n) for n in executed}
    out = []
    if listed:
        missing = len([n for n in listed if n not in present]) * 100.0 / len(listed)
        if missing > STALE_PCT:
            out.append(f"symbol order: {missing:.1f}% of the {len(listed)} listed names are not in the library "
                       f"(over {STALE_PCT:g}%): run bench/gen_symbol_order.sh")
    if executed:
        unlisted = len([n for n in executed if n not in listed]) * 100.0 / len(executed)
        if unlisted > STALE_PCT:
            out.append(f"symbol order: {unlisted:.1f}% of the {len(executed)} functions a loop run executes are "
                       f"not listed (over {STALE_PCT:g}%): run bench/gen_symbol_order.sh")
    return out


def selftest():
    base = {"rows": {"a": 1000, "b": 1000, "c": 1000, "r": 1000}, "tolerance_pct": {"r": 10}}
    _, f = compare(base, {"a": 1000, "b": 1049, "c": 900, "r": 1090})
    assert f == [], f
    _, f = compare(base, {"a": 1100, "b": 1000, "c": 1000, "r": 1000})
    assert len(f) == 1 and f[0].startswith("a: 1,000 -> 1,100 (+10.00%"), f
    _, f = compare(base, {"a": 1000, "b": 1000, "c": 1000, "r": 1101})
    assert len(f) == 1 and f[0].startswith("r:"), f
    _, f = compare(dict(base, report_only=["r"]), {"a": 1000, "b": 1000, "c": 1000, "r": 1500})
    assert f == [], f
    _, f = compare(base, {"a": 1000, "b": 1000, "c": 1000})
    assert f == ["r: in the baseline but not measured"], f
    _, f = compare(base, {"a": 1000, "b": 1000, "c": 1000, "r": 1000, "new": 5})
    assert len(f) == 1 and f[0].startswith("new:"), f
    listed = [f"f{i}" for i in range(100)]
    assert stale_order(listed, set(listed), set(listed[:50])) == []
    assert len(stale_order(listed, set(listed[6:]), set())) == 1
    assert len(stale_order(listed, set(listed), set(listed) | {f"g{i}" for i in range(6)})) == 1
    assert stale_order(listed, set(listed[5:]), set(listed) | {f"g{i}" for i in range(5)}) == []
    # Built elsewhere: the same functions under other crate and LTO hashes.
    here = ["_RNvCs1AbC_9toolnexus3run", "_RNvCs1AbC_9toolnexus4step.llvm.123"]
    there = {"_RNvCs9XyZ_9toolnexus3run", "_RNvCs9XyZ_9toolnexus4step.llvm.987"}
    assert stale_order(here, there, there) == []
    print("guard selftest: ok")


# --------------------------------------------------------------------------
# Measuring.


def sh(argv, **kw):
    return subprocess.run(argv, check=True, **kw)


class Work:
    def __init__(self, target):
        self.target = target
        self.tmp = tempfile.mkdtemp(prefix="tn_guard.")
        self.mock = None

    def close(self):
        if self.mock:
            self.mock.kill()
            self.mock.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, *p):
        return os.path.join(self.tmp, *p)


def instructions(out_file):
    with open(out_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit(f"guard: no totals in {out_file}")


def callgrind(w, name, argv, toggle=None, env=None, stdin=None):
    out = w.path(f"cg.{name}")
    cmd = ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}"]
    if toggle:
        cmd.append(f"--toggle-collect={toggle}")
    r = subprocess.run(cmd + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"guard: {name} failed ({r.returncode})")
    return instructions(out), r.stdout


def build(w):
    env = dict(os.environ, CARGO_TARGET_DIR=w.target)
    # One invocation: the library is a package named on the command line
    # (as in `cargo build --release`), so the build install.sh made serves
    # here too; named only as toolnexus-guard's dependency it is built again.
    sh(["cargo", "build", "--release", "--quiet", "-p", "toolnexus", "-p", "toolnexus-guard",
        "--lib", "--bins"], cwd=ROOT, env=env)
    w.translate_bin = os.path.join(w.target, "release", "guard_translate")
    # The shared library carries a soname: link a copy by it, as from an install.
    lib = w.path("lib")
    os.makedirs(lib)
    so = os.path.join(w.target, "release", "libtoolnexus.so")
    soname = re.search(r"\(SONAME\).*\[(.*)\]", sh(["readelf", "-d", so], stdout=subprocess.PIPE).stdout.decode())
    shutil.copy(so, os.path.join(lib, "libtoolnexus.so"))
    if soname and soname.group(1) != "libtoolnexus.so":
        os.symlink("libtoolnexus.so", os.path.join(lib, soname.group(1)))
    w.lib = os.path.join(lib, "libtoolnexus.so")
    flags = ["-O2", f"-I{ROOT}/include", f"-L{lib}", f"-Wl,-rpath,{lib}"]
    progs = {"bench_overhead": "bench/c/bench_overhead.c", "bench_skills": "bench/c/bench_skills.c",
             "bench_cold": "bench/c/bench_cold.c", "guard_host": "bench/guard/guard_host.c"}
    for exe, src in progs.items():
        sh(["cc", *flags, os.path.join(ROOT, src), "-ltoolnexus",
            "-o", w.path(exe)])
    sh(["cc", "-O2", "-pthread", os.path.join(ROOT, "bench/c/overhead_mock_llm.c"), "-o", w.path("mock_llm")])
    sh(["cc", "-O2", os.path.join(ROOT, "bench/c/overhead_mcp_server.c"), "-o", w.path("mcp_server")])
    sh(["cc", "-O2", os.path.join(HERE, "peak_rss.c"), "-o", w.path("peak_rss")])
    sh([sys.executable, os.path.join(ROOT, "bench/gen_skills.py"), w.path("skills"), "1000"],
       stdout=subprocess.DEVNULL)


def start_mock(w):
    port_file = w.path("port")
    with open(port_file, "w") as f:
        w.mock = subprocess.Popen([w.path("mock_llm"), "0"], stdout=f)
    for _ in range(400):
        with open(port_file) as f:
            first = f.readline().strip()
        if first:
            return f"http://127.0.0.1:{first}"
        time.sleep(0.05)
    raise SystemExit("guard: the mock provider did not start")


def served_read(w, calls):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import serve_overhead  # noqa: E402  (the lean stdio client)
    small = w.path("small.txt")
    with open(small, "w") as f:
        f.write("a small file of sixty bytes, read by the builtin read tool.\n")
    cfg = w.path("serve.json")
    with open(cfg, "w") as f:
        json.dump({}, f)
    out = w.path(f"cg.serve.{calls}")
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            os.path.join(w.target, "release", "toolnexus"), "serve", "--stdio", "--config", cfg]
    c = serve_overhead.Stdio(argv)
    for _ in range(calls):
        answer = c.request("tools/call", {"name": "read", "arguments": {"path": small}})
        result = answer.get("result")
        if not result or result.get("isError"):
            raise SystemExit(f"guard: served read failed: {answer}")
    c.close()
    return instructions(out)


def peak_rss_kb(w, argv):
    """Peak resident set (kB) of one run of the overhead scenario, measured
    by peak_rss.c (a child of Python would count Python's own peak)."""
    r = subprocess.run([w.path("peak_rss")] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = r.stderr.decode(errors="replace")
    m = re.search(r"^peak_rss_kb (\d+)$", err, re.M)
    if r.returncode != 0 or b'"final_ok":true' not in r.stdout or not m:
        raise SystemExit(f"guard: rss run failed: {err[-500:]}")
    return int(m.group(1))


def library_functions(lib):
    nm = sh(["nm", "--defined-only", lib], stdout=subprocess.PIPE).stdout.decode()
    return {p[2] for p in (line.split() for line in nm.splitlines()) if len(p) == 3 and p[1] in "tT"}


def executed_in_lib(cg_file):
    """The library functions a callgrind run executed: the symbol-order
    generator's own reading (bench/gen_symbol_order.py)."""
    return gen_symbol_order.executed(cg_file, "libtoolnexus")


def start_up_failures(lib, executed):
    """What a host's process start pays that the library can spare it: the
    libgcc_s.so.1 it would load (when libgcc_eh.a is there to link in), and
    a CPU feature probe in the cold start (`executed`: the functions a cold
    run executed in the library)."""
    out = []
    eh = sh(["cc", "-print-file-name=libgcc_eh.a"], stdout=subprocess.PIPE).stdout.decode().strip()
    dynamic = sh(["readelf", "-d", lib], stdout=subprocess.PIPE).stdout.decode()
    if os.path.isabs(eh) and os.path.isfile(eh) and "[libgcc_s.so" in dynamic:
        out.append("start-up: the library needs libgcc_s.so.1 although libgcc_eh.a is there "
                   "(link/cc-order links the unwinder in)")
    probes = sorted(n for n in executed if "detect_and_initialize" in n)
    if probes:
        out.append(f"start-up: the cold start probes the CPU's features ({probes[0]}): "
                   "a start path uses the memchr crate where crate::sys::bytes would do")
    return out


def measure(w, only=None):
    """Every wanted row, its workloads two (or as many as there are cores)
    at a time: instruction counts do not depend on what else runs, and the
    RSS row takes the least of three runs."""
    rows, notes = {}, []

    def want(name):
        return only is None or name in only

    def per(a, b, n):
        return (a - b) // n

    def skills():
        rows["build_1000_skills"], _ = callgrind(w, "skills", [w.path("bench_skills"), w.path("skills"), "rss"])

    def render():
        total, _ = callgrind(w, "render", [w.path("guard_host"), "render", "3"], toggle="tn_render")
        rows["first_render_1000"] = total // 3

    def execute():
        total, _ = callgrind(w, "exec", [w.path("guard_host"), "exec", w.path("skills"), "200"],
                             toggle="tn_execute")
        rows["execute_skill"] = total // 200

    def translate():
        a, _ = callgrind(w, "tr.a", [w.translate_bin, "1100"])
        b, _ = callgrind(w, "tr.b", [w.translate_bin, "100"])
        rows["translate_conversion"] = per(a, b, 1000)

    def translate_style(style):
        a, _ = callgrind(w, f"tr.{style}.a", [w.translate_bin, "550", style])
        b, _ = callgrind(w, f"tr.{style}.b", [w.translate_bin, "50", style])
        rows[f"translate_{style}_request"] = per(a, b, 500)

    def overhead(run):
        a, out = callgrind(w, "run.a", run + ["60"])
        if b'"final_ok":true' not in out:
            raise SystemExit("guard: the overhead scenario did not answer")
        b, _ = callgrind(w, "run.b", run + ["10"])
        if want("run_overhead"):
            rows["run_overhead"] = per(a, b, 50)
        if want("symbol_order"):
            listed = [n.strip() for n in open(os.path.join(ROOT, "link", "symbol-order.txt"))
                      if n.strip() and not n.startswith("#")]
            present = library_functions(w.lib)
            executed = executed_in_lib(w.path("cg.run.a")) & present
            notes.extend(stale_order(listed, present, executed))
            exact = len([n for n in listed if n not in present])
            print(f"symbol order: {len(listed)} listed ({exact} not in this build under the same name, "
                  f"which lld then cannot place); {len(executed)} executed")

    def served():
        rows["serve_stdio_read"] = min((served_read(w, 250) - served_read(w, 50)) // 200
                                       for _ in range(2))

    def cold():
        rows["cold_start"], _ = callgrind(w, "cold", [w.path("bench_cold"), os.path.join(ROOT, "examples/skills")])
        notes.extend(start_up_failures(w.lib, executed_in_lib(w.path("cg.cold"))))

    def init():
        # tn_client_new does not connect: any provider URL will do.
        argv = [w.path("guard_host"), "init", w.path("mcp_server"), "http://127.0.0.1:9"]
        a, _ = callgrind(w, "init.a", argv + ["6"])
        b, _ = callgrind(w, "init.b", argv + ["1"])
        rows["loop_init"] = per(a, b, 5)

    def agents():
        a, _ = callgrind(w, "agents.a", [w.path("guard_host"), "agents", "60"])
        b, _ = callgrind(w, "agents.b", [w.path("guard_host"), "agents", "10"])
        rows["agent_turn"] = per(a, b, 50)

    jobs = []
    run = None
    if want("run_overhead") or want("loop_peak_rss_kb") or want("symbol_order"):
        url = start_mock(w)
        run = [w.path("bench_overhead"), "--url", url, "--mcp", w.path("mcp_server"), "--warmup", "0", "--runs"]
        if want("run_overhead") or want("symbol_order"):
            jobs.append(functools.partial(overhead, run))
    # The longest first, so that the pool ends together.
    for row, job in [("serve_stdio_read", served), ("translate_conversion", translate),
                     ("translate_gemini_request", functools.partial(translate_style, "gemini")),
                     ("translate_responses_request", functools.partial(translate_style, "responses")),
                     ("agent_turn", agents), ("loop_init", init), ("build_1000_skills", skills),
                     ("first_render_1000", render),
                     ("execute_skill", execute), ("cold_start", cold)]:
        if want(row):
            jobs.append(job)
    def timed(job):
        t = time.time()
        job()
        return f"{getattr(job, '__name__', None) or job.func.__name__} {time.time() - t:.0f} s"

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        spent = [done.result() for done in [pool.submit(timed, job) for job in jobs]]
    print("guard: time per workload: " + ", ".join(spent))
    if run is not None and want("loop_peak_rss_kb"):
        # Alone, after the rest: a peak, not a count.
        rows["loop_peak_rss_kb"] = min(peak_rss_kb(w, run + ["20"]) for _ in range(3))
    return rows, notes


def main():
    args = sys.argv[1:]
    if args[:1] == ["--selftest"]:
        selftest()
        return 0
    update = None
    if args[:1] == ["--update"]:
        if len(args) < 2 or not args[1].strip():
            raise SystemExit("guard: --update needs the reason for the new baseline")
        update = args[1]
    if not shutil.which("valgrind"):
        raise SystemExit("guard: needs valgrind")
    selftest()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    only = set(os.environ["TN_GUARD_ONLY"].split(",")) if os.environ.get("TN_GUARD_ONLY") else None
    w = Work(target)
    started = time.time()
    try:
        build(w)
        print(f"guard: built in {time.time() - started:.0f} s")
        rows, order_failures = measure(w, only)
    finally:
        w.close()
    if update is not None:
        with open(BASELINE, "w") as f:
            json.dump({"reason": update, "tolerance_pct": {"loop_peak_rss_kb": RSS_TOLERANCE_PCT},
                       "report_only": REPORT_ONLY,
                       "rows": rows}, f, indent=2, sort_keys=True)
            f.write("\n")
        print(f"guard: wrote {os.path.relpath(BASELINE, ROOT)} ({len(rows)} rows)")
        for line in order_failures:
            print(line)
        return 0
    with open(BASELINE) as f:
        baseline = json.load(f)
    if only is not None:
        baseline["rows"] = {k: v for k, v in baseline["rows"].items() if k in only}
    lines, failures = compare(baseline, rows)
    print(f"{'row':22s} {'baseline':>14s} {'now':>14s} {'change':>8s}")
    for line in lines:
        print(line)
    failures += order_failures
    secs = time.time() - started
    if failures:
        for f in failures:
            print(f"guard: {f}")
        print(f"perf guard: {len(failures)} failing, {len(rows)} rows ({secs:.0f} s)")
        return 1
    print(f"perf guard: ok, {len(rows)} rows within tolerance ({secs:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
