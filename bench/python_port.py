#!/usr/bin/env python3
"""In-process medians of the Python port's read/grep/glob builtins on the
benchmark tree, for the side-by-side table (needs `pip install
toolnexus==0.21.0`; prints a note and exits 0 when it is not installed).

    python3 bench/python_port.py OUT_DIR [RUNS]
"""
import asyncio
import json
import statistics
import sys
import time

try:
    from toolnexus.builtin import create_builtin_tools
except ImportError:
    print("python port: toolnexus not installed, skipped")
    sys.exit(0)


def main():
    out = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    tools = {t.name: t for t in create_builtin_tools()}
    cases = [
        ("read 1 MiB", "read", {"path": f"{out}/read-1mib.txt"}),
        ("grep regex", "grep", {"pattern": "TNX_NEEDLE_[0-9]+_ZQ", "path": f"{out}/tree"}),
        ("glob **/*.txt", "glob", {"pattern": "**/*.txt", "path": f"{out}/tree"}),
    ]
    loop = asyncio.new_event_loop()
    for label, name, args in cases:
        times = []
        for _ in range(runs + 2):
            t0 = time.perf_counter()
            loop.run_until_complete(tools[name].execute(args))
            times.append(time.perf_counter() - t0)
        med = statistics.median(times[2:]) * 1000
        print(f"python port {label}: median {med:.2f} ms over {runs} runs")
    # The same read with the ToolResult JSON text made, as tn_execute hands
    # it out (the port has no C ABI; json.dumps is its own way to get there).
    times = []
    for _ in range(runs + 2):
        t0 = time.perf_counter()
        r = loop.run_until_complete(tools["read"].execute(cases[0][2]))
        json.dumps({"output": r.output, "isError": r.is_error}, ensure_ascii=False,
                   separators=(",", ":"))
        times.append(time.perf_counter() - t0)
    med = statistics.median(times[2:]) * 1000
    print(f"python port read 1 MiB + JSON text: median {med:.2f} ms over {runs} runs")
    # read of a 1 MiB PNG: the summary line and the bytes as a base64 part,
    # with the ToolResult JSON (parts included) made, as tn_execute gives it.
    png = {"path": f"{out}/read-1mib.png"}
    times = []
    for _ in range(runs + 2):
        t0 = time.perf_counter()
        r = loop.run_until_complete(tools["read"].execute(png))
        json.dumps({"output": r.output, "isError": r.is_error, "parts": r.parts},
                   ensure_ascii=False, separators=(",", ":"))
        times.append(time.perf_counter() - t0)
    med = statistics.median(times[2:]) * 1000
    print(f"python port read 1 MiB PNG + JSON text: median {med:.2f} ms over {runs} runs")


if __name__ == "__main__":
    main()
