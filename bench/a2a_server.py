#!/usr/bin/env python3
"""One A2A agent for bench/run_a2a.sh, served until stdin closes, with an
in-process mock model (a Python function answering "Hello." to every
request) on both sides, so that both pay the same for the model:

    a2a_server.py rs STORE     toolnexus-rs through its Python binding
                               (Toolkit.serve(a2a={"store": STORE},
                               client=Client(generate=...)); needs
                               TOOLNEXUS_LIB and bindings/python/src on
                               PYTHONPATH)
    a2a_server.py port         the Python port 0.21.0's start_a2a_server
                               (Toolkit.serve with create_in_process_client;
                               its in-memory task store)

Prints the base URL on one line, then serves. Both speak upstream's
"toolnexus" profile (SendMessage / GetTask, no A2A-Version header).
"""
import asyncio
import sys

SKILL = {"name": "greet", "description": "Says hello.", "content": "Say hello."}


def serve_rs(store):
    import toolnexus_rs as tn

    with tn.Toolkit({"builtins": False, "skills": [SKILL]}) as tk, \
         tn.Client({"model": "m"}, generate=lambda ev: "Hello.") as client, \
         tk.serve("127.0.0.1:0", a2a={"name": "bench", "store": store, "protocol": "toolnexus"},
                  client=client) as server:
        print(server.base, flush=True)
        sys.stdin.read()


async def serve_port():
    from toolnexus import create_in_process_client, create_toolkit
    from toolnexus.skill import SkillDef

    tk = await create_toolkit(builtins=False, skills=[SkillDef(**SKILL)])
    client = create_in_process_client(model="m", generate=lambda req: {"content": "Hello."})
    handle = await tk.serve("127.0.0.1:0", client=client, a2a={"name": "bench", "store": "memory"})
    print(handle.url, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await handle.close()


def main():
    if sys.argv[1] == "rs":
        serve_rs(sys.argv[2] if len(sys.argv) > 2 else "memory")
    else:
        asyncio.run(serve_port())


if __name__ == "__main__":
    main()
