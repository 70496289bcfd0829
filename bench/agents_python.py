#!/usr/bin/env python3
"""The 3-level agent tree (coordinator -> 4 workers -> 2 leaves each: 13
handles, 18 model calls) on an in-process model, in the Python port 0.21
(`toolnexus.agents`, needs `pip install toolnexus==0.21.0` in a scratch
venv; prints a note and exits 0 when it is not installed). Prints the median
wall time and process CPU time per tree, and per model call.

    python3 bench/agents_python.py [TREES]
    python3 bench/agents_python.py idle N   N idle worker handles in one
                                            runtime: the resident memory
                                            they add (VmRSS before/after)

bench/README.md ("Agent tree") puts it beside the Rust runtime's figures
(`cargo run --release --example agent_tree`).
"""
import asyncio
import statistics
import sys
import time

try:
    from toolnexus.agents import AgentDef, AgentRuntime
except ImportError:
    print("python port: toolnexus not installed, skipped")
    sys.exit(0)


def model(request):
    """coordinator: 4 task calls, then a summary; worker: 2 task calls, then
    a summary; leaf: an answer. Usage 3 + 2 per call."""
    msgs = request["messages"]
    tools = [m.get("content") for m in msgs if m.get("role") == "tool"]
    usage = {"prompt_tokens": 3, "completion_tokens": 2}
    name = request["model"]
    if name == "m-coord" and not tools:
        return {"usage": usage, "tool_calls": [
            {"name": "task", "arguments": {"agent": "worker", "prompt": f"part {i}"}} for i in range(4)]}
    if name == "m-worker" and not tools:
        return {"usage": usage, "tool_calls": [
            {"name": "task", "arguments": {"agent": "leaf", "prompt": f"piece {i}"}} for i in range(2)]}
    if name == "m-leaf":
        return {"usage": usage, "content": "leaf done"}
    return {"usage": usage, "content": f"{name} done with {len(tools)}"}


def registry():
    return {
        "coordinator": AgentDef(name="coordinator", description="splits", system_prompt="You coordinate.",
                                model="m-coord", task_targets=["worker"]),
        "worker": AgentDef(name="worker", description="works", system_prompt="You work.",
                           model="m-worker", task_targets=["leaf"]),
        "leaf": AgentDef(name="leaf", description="answers", system_prompt="You answer.", model="m-leaf"),
    }


async def one_tree():
    rt = AgentRuntime(registry=registry(), in_process=model, max_concurrent_turns=8)
    h = rt.spawn(rt.root, "coordinator")
    rt.wake(h, "go")
    r = await rt.wait(h)
    assert r.status == "done", (r.status, r.text)
    await rt.close(rt.root, force=True)


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def idle(n):
    rt = AgentRuntime(registry=registry(), in_process=model, max_concurrent_turns=8)
    before = status_kb("VmRSS")
    handles = [rt.spawn(rt.root, "worker") for _ in range(n)]
    after = status_kb("VmRSS")
    print(f"python port 0.21 idle handles: {len(handles)} workers, VmRSS {before} -> {after} kB "
          f"(+{(after - before) / 1024:.1f} MB, {(after - before) * 1024 / max(n, 1):.0f} bytes per handle), "
          f"peak {status_kb('VmHWM')} kB")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "idle":
        idle(int(sys.argv[2]))
        return
    trees = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    loop = asyncio.new_event_loop()
    loop.run_until_complete(one_tree())  # warm up
    walls, cpus = [], []
    for _ in range(trees):
        w0, c0 = time.perf_counter(), time.process_time()
        loop.run_until_complete(one_tree())
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    wall, cpu = statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3
    print(f"python port 0.21 agent tree: median wall {wall:.2f} ms, CPU {cpu:.2f} ms per tree "
          f"({cpu * 1e3 / 18:.0f} us CPU per model call) over {trees} trees")


if __name__ == "__main__":
    main()
