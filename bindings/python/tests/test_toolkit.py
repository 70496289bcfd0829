"""The Python binding as a Python agent uses it: build, render, execute,
Python functions as tools (from many threads), typed errors, translate, the
asyncio wrappers, and the parity harness over the vectors."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import MockServer, tn  # noqa: E402

REPO = HERE.parents[2]
SKILLS = str(REPO / "examples" / "skills")


def test_version_and_abi():
    assert tn.version() == "0.1.0"


def test_set_io_threads_comes_before_the_first_build():
    # In a process of its own: this one's runtime is running already.
    child = r"""
import toolnexus_rs as tn
for bad in (0, 65, -1, "2"):
    try:
        tn.set_io_threads(bad)
    except tn.InvalidArgumentError as e:
        assert "threads must be 1 to 64" in e.message, e
    else:
        raise SystemExit(f"{bad!r} taken")
tn.set_io_threads(1)
# A provider call starts the runtime (nothing listens on port 9 here).
client = {"baseUrl": "http://127.0.0.1:9", "style": "openai", "model": "m", "apiKey": "k", "retries": 0}
try:
    tn.translate(client, {"messages": [{"role": "user", "content": "hi"}]})
except tn.ProviderError:
    pass
try:
    tn.set_io_threads(2)
except tn.InvalidArgumentError as e:
    print(e.message)
"""
    # The child imports the package this process imported.
    where = str(Path(tn.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=where + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "already running with 1 worker thread: call tn_set_io_threads before any other call" in out.stdout, out


def test_build_render_and_execute_a_skill():
    with tn.Toolkit({"skillsDir": SKILLS}) as tk:
        names = tk.render("toolNames")
        assert "skill" in names and "bash" in names
        gemini = tk.render("gemini")
        assert len(gemini) == 1 and "functionDeclarations" in gemini[0]
        subset = tk.render("anthropic", tools=["write", "bash"])
        assert [t["name"] for t in subset] == ["write", "bash"]
        skills = tk.render("skills")["skills"]
        assert skills, "examples/skills holds skills"
        first = skills[0]["name"]
        r = tk.execute("skill", {"name": first})
        assert not r.is_error and first in r.output
        # The OpenAI wire form: arguments as a JSON string.
        r = tk.execute("skill", json.dumps({"name": first}))
        assert not r.is_error


def test_a_failing_tool_is_a_result_not_an_exception():
    with tn.Toolkit({}) as tk:
        r = tk.execute("no_such_tool", {})
        assert r.is_error and r.output == "unknown tool: no_such_tool"
        r = tk.execute("bash", {"command": "echo out; exit 3"})
        assert r.is_error and "exit code 3" in r.output


def test_bad_config_raises_a_typed_error_naming_the_key():
    with pytest.raises(tn.InvalidConfigError) as e:
        tn.Toolkit({"skilsDir": "x"})
    assert e.value.code == "invalid_config" and e.value.status == 4
    assert "skilsDir" in e.value.message
    with pytest.raises(tn.InvalidJsonError):
        tn.Toolkit("{not json")
    with tn.Toolkit({}) as tk, pytest.raises(tn.UnknownFormatError):
        tk.render("yaml")


def test_python_functions_as_tools():
    with tn.Toolkit({"builtins": False}) as tk:

        @tk.register("add", "Add two integers.", {"type": "object", "properties": {"a": {"type": "integer"}}})
        def add(args):
            return str(args["a"] + args["b"])

        @tk.register("lookup")
        def lookup(args):
            return tn.ToolResult("not found", is_error=True, metadata={"status": 404})

        @tk.register("shot")
        def shot(args):
            png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
            return {"output": "the screen", "parts": [{"type": "image", "mimeType": "image/png", "data": png}]}

        @tk.register("boom")
        def boom(args):
            raise RuntimeError("it broke")

        @tk.register("wrong")
        def wrong(args):
            return 42

        decl = {t["name"]: t for t in tk.render("tools")}
        assert decl["add"]["source"] == "native" and decl["add"]["description"] == "Add two integers."
        assert tk.execute("add", {"a": 2, "b": 40}).output == "42"
        r = tk.execute("lookup")
        assert r.is_error and r.metadata == {"status": 404}
        r = tk.execute("shot")
        assert r.parts[0]["mimeType"] == "image/png"
        r = tk.execute("boom")
        assert r.is_error and r.output == "it broke"
        r = tk.execute("wrong")
        assert r.is_error and "expected str, ToolResult or dict" in r.output


def test_tools_called_from_many_threads_at_once():
    with tn.Toolkit({"builtins": False}) as tk:
        seen = set()
        lock = threading.Lock()

        @tk.register("whoami")
        def whoami(args):
            with lock:
                seen.add(threading.get_ident())
            return str(args["n"])

        errors = []

        def worker(base):
            for i in range(200):
                n = base * 1000 + i
                if tk.execute("whoami", {"n": n}).output != str(n):
                    errors.append(n)

        threads = [threading.Thread(target=worker, args=(b,)) for b in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(seen) >= 2


def test_a_tool_may_call_back_into_the_library():
    with tn.Toolkit({}) as tk:

        @tk.register("outer")
        def outer(args):
            return tk.execute("bash", {"command": "echo inner"}).output.strip()

        assert tk.execute("outer").output == "inner"


def test_a_closed_toolkit_refuses_calls():
    tk = tn.Toolkit({})
    tk.close()
    tk.close()  # idempotent
    with pytest.raises(tn.ToolnexusError) as e:
        tk.execute("bash", {"command": "true"})
    assert "closed" in e.value.message


def _openai_answer(text):
    return {"status": 200, "body": {"choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": text}}],
                                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}}


def test_translate_and_its_errors():
    srv = MockServer()
    try:
        srv.responses += [_openai_answer("hello"), {"status": 400, "bodyText": "bad request body"}]
        client = {"baseUrl": srv.base, "model": "gpt-test", "apiKey": "sk-test", "retries": 0}
        with tn.Toolkit({"builtins": {"tools": {"bash": True}}}) as tk:
            out = tn.translate(client, {"messages": [{"role": "user", "content": "Hi"}]}, toolkit=tk)
        assert out["text"] == "hello" and out["usage"]["totalTokens"] == 5
        sent = json.loads(srv.requests[0]["body"])
        assert sent["model"] == "gpt-test" and any(t["function"]["name"] == "bash" for t in sent["tools"])
        with pytest.raises(tn.ProviderError) as e:
            tn.translate(client, {"messages": [{"role": "user", "content": "Hi"}]})
        assert "400" in e.value.message and "bad request body" in e.value.message
    finally:
        srv.close()


def test_asyncio_wrappers_run_off_the_event_loop():
    srv = MockServer()
    try:
        srv.responses.append(_openai_answer("async hello"))
        client = {"baseUrl": srv.base, "model": "gpt-test", "apiKey": "sk-test", "retries": 0}

        async def main():
            with tn.Toolkit({}) as tk:
                ticks = 0

                async def ticker():
                    nonlocal ticks
                    while True:
                        ticks += 1
                        await asyncio.sleep(0.01)

                t = asyncio.ensure_future(ticker())
                r = await tk.aexecute("bash", {"command": "sleep 0.3; echo done"})
                t.cancel()
                out = await tn.atranslate(client, {"messages": [{"role": "user", "content": "Hi"}]})
                return r, out, ticks

        r, out, ticks = asyncio.run(main())
        assert r.output == "done\n" and out["text"] == "async hello"
        assert ticks >= 3, "the event loop kept running while the tool ran"
    finally:
        srv.close()


def test_mcp_inventory_without_a_toolkit(tmp_path):
    server = str(REPO / "tests" / "mcp_servers" / "sdk_server.py")
    config = {"mcpServers": {"sdk": {"command": ["python3", server, "stdio"], "timeout": 20000},
                             "dead": {"command": ["/nonexistent/tn-server"]}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    for given in (config, str(path)):
        inv = tn.list_mcp_tools(given)
        assert inv["status"] == {"sdk": "connected", "dead": "failed"}
        assert sorted(t["name"] for t in inv["tools"]["sdk"]) == ["add", "echo", "explode"]
        assert "dead" in inv["errors"]


def test_a_missing_library_is_a_clear_error():
    with pytest.raises(OSError) as e:
        tn.load("/nonexistent/libtoolnexus.so")
    assert "/nonexistent/libtoolnexus.so" in str(e.value)


def test_parity_harness_passes_every_vector():
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, str(HERE / "parity.py")], capture_output=True, text=True, env=env,
                          timeout=900)
    print(proc.stdout)
    summary = [ln for ln in proc.stdout.splitlines() if ln.startswith("parity: ")]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert summary and " 0 failed" in summary[-1]


def test_registering_a_name_again_lets_the_old_function_go():
    import gc
    import weakref

    class Holder:
        def __call__(self, args):
            return "held"

    with tn.Toolkit({"builtins": False}) as tk:
        first = Holder()
        gone = weakref.ref(first)
        tk.register_function("f", first)
        assert tk.execute("f").output == "held"
        del first
        for _ in range(200):
            tk.register_function("f", Holder())
        gc.collect()
        assert gone() is None, "the replaced function is still kept alive"
        assert tk.execute("f").output == "held"


def test_ctrl_c_inside_a_python_tool_on_the_main_thread_is_raised_not_swallowed():
    import signal
    import time

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with tn.Toolkit({"builtins": False}) as tk:

            def interrupted(args):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)  # the KeyboardInterrupt lands here
                return "not reached"

            tk.register_function("interrupted", interrupted)
            tk.register_function("plain", lambda args: "fine")
            started = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                tk.execute("interrupted")
            assert time.monotonic() - started < 4
            # The toolkit is still usable, and the next call is not
            # interrupted by the last one.
            assert tk.execute("plain").output == "fine"
            # A tool that raises a plain exception is still a result.
            tk.register_function("boom", lambda args: 1 / 0)
            r = tk.execute("boom")
            assert r.is_error and "division" in r.output
    finally:
        signal.signal(signal.SIGINT, previous)
