#!/usr/bin/env python3
"""The Python toolnexus port (0.21.0) on the skills benchmark work, for the
side-by-side table in README.md. Run by bench/run_skills.sh inside a venv.

usage: skills_python.py SKILLS_DIR [rss|cold]
Prints one line per measurement: name median_seconds. `cold` builds the
toolkit once, renders it for OpenAI and exits (the cold-start row, timed from
outside by bench_spawn).
"""
import asyncio
import json
import statistics
import sys
import time

import toolnexus


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def tools_1000():
    schema = {"type": "object", "properties": {"id": {"type": "string", "description": "Identifier"},
                                               "limit": {"type": "number"}}, "required": ["id"]}
    return [toolnexus.http_tool(name=f"tool_{i:04d}", description=f"Benchmark tool {i}.", method="GET",
                                url="http://127.0.0.1:9/x/{id}", input_schema=schema)
            for i in range(1000)]


def main():
    skills_dir = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "rss":
        asyncio.run(toolnexus.create_toolkit(skills_dir=skills_dir))
        return
    if len(sys.argv) > 2 and sys.argv[2] == "cold":
        tk = asyncio.run(toolnexus.create_toolkit(skills_dir=skills_dir))
        assert json.dumps(tk.to_openai()).startswith("[")
        return
    build = lambda: asyncio.run(toolnexus.create_toolkit(skills_dir=skills_dir))
    print("build_1000_skills", median_time(build, 15))
    def first_render():
        # A fresh list of tools each time: the port caches nothing, so every
        # render is a first one.
        tools = tools_1000()
        t0 = time.perf_counter()
        json.dumps(toolnexus.to_openai(tools))
        return time.perf_counter() - t0
    print("render_first_1000_openai", statistics.median(first_render() for _ in range(15)))
    tools = tools_1000()
    for name, fn in (("openai", toolnexus.to_openai), ("anthropic", toolnexus.to_anthropic),
                     ("gemini", toolnexus.to_gemini)):
        print(f"render_1000_{name}", median_time(lambda: json.dumps(fn(tools)), 50))
    tk = asyncio.run(toolnexus.create_toolkit(skills_dir=skills_dir))
    loop = asyncio.new_event_loop()
    run = lambda: loop.run_until_complete(tk.execute("skill", {"name": "skill-0500"}))
    res = run()
    assert not res.is_error if hasattr(res, "is_error") else True
    print("execute_skill", median_time(run, 500))


if __name__ == "__main__":
    main()
