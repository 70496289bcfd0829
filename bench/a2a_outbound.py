#!/usr/bin/env python3
"""The outbound half of bench/run_a2a.sh: a toolkit calling an A2A agent
through its agent tool (SendMessage, then GetTask every POLL ms until the
task ends), timed per call from Python:

    a2a_outbound.py rs CARD_URL RUNS WARMUP     toolnexus-rs (bindings/python:
                                                Toolkit.add_agent, execute)
    a2a_outbound.py port CARD_URL RUNS WARMUP   the Python port 0.21.0
                                                (toolnexus.a2a.agent_tools)

Both with pollEvery 1 ms (the default is 1000 on both). Prints
{"latencies_ms":[...],"ok":true|false}.
"""
import asyncio
import json
import sys
import time

POLL_MS = 1


def run_rs(card, runs, warmup):
    import toolnexus_rs as tn

    lat, ok = [], True
    with tn.Toolkit({"builtins": False}) as tk:
        added = tk.add_agent({"card": card, "pollEvery": POLL_MS})
        name = added["added"][0]
        for i in range(warmup + runs):
            t0 = time.perf_counter()
            r = tk.execute(name, {"task": "hi"})
            dt = time.perf_counter() - t0
            ok = ok and not r.is_error and "Hello." in r.output
            if i >= warmup:
                lat.append(dt * 1e3)
    return lat, ok


async def run_port(card, runs, warmup):
    from toolnexus.a2a import Agent, agent_tools

    tool = (await agent_tools(Agent(card=card, poll_every=POLL_MS)))[0]
    lat, ok = [], True
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        r = await tool.execute({"task": "hi"})
        dt = time.perf_counter() - t0
        ok = ok and not r.is_error and "Hello." in r.output
        if i >= warmup:
            lat.append(dt * 1e3)
    return lat, ok


def main():
    impl, card, runs, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if impl == "rs":
        lat, ok = run_rs(card, runs, warmup)
    else:
        lat, ok = asyncio.run(run_port(card, runs, warmup))
    print(json.dumps({"latencies_ms": [round(x, 4) for x in lat], "ok": ok}))


if __name__ == "__main__":
    main()
