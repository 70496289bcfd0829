"""The Python parity harness: every case of the conformance vectors
(tests/conformance/vectors, or the directory named by TN_CONFORMANCE_DIR) run
through this package and compared with what the upstream Clojure port
recorded, by the rules of tests/conformance/README.md and the same decisions
as the Go and C harnesses (bindings/go/parity_test.go):

- hostSpecific: a ToolResult compares isError and a trailing "exit code N"
  line only; expectFiles by names; a translate error by its status only.
- op run (the client loop): a Client from the case's client, its hooks and
  waitFor (described as data) as Python callables that record what they
  saw, tool requests (paths under /tool/) answered from serverResponses.
- divergences.json cases count D, proposed-divergences.json cases count apart;
  neither is run. An op this harness does not know counts S.

    python3 bindings/python/tests/parity.py     # prints the parity: line
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
try:
    import toolnexus_rs as tn
except ImportError:  # run from a checkout without `pip install ./bindings/python`
    sys.path.insert(0, str(HERE.parent / "src"))
    import toolnexus_rs as tn

BUILTINS = {"apply_patch", "bash", "edit", "glob", "grep", "question", "read", "todowrite", "webfetch", "write"}
EXIT_LINE = re.compile(r"(?:^|\n)(exit code -?\d+)$")
LLM_STATUS = re.compile(r"^LLM (\d{3}): (.*)$", re.S)


# ---------------------------------------------------------------- mock server
class MockServer:
    """Answers canned responses in order, one per request (404 after), and
    records every request: method, raw path, raw query, headers, body."""

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        # op run: requests under /tool/ (HTTP tools) answer from their own
        # queue once ``routed`` is set.
        self.routed = False
        self.tool_responses: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _any(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                path, sep, query = self.path.partition("?")
                headers: dict[str, list[str]] = {}
                for k, v in self.headers.items():
                    headers.setdefault(k.lower(), []).append(v)
                with mock.lock:
                    mock.requests.append(
                        {"method": self.command, "path": path, "query": query if sep else None,
                         "headers": headers, "body": body}
                    )
                    queue = mock.tool_responses if mock.routed and path.startswith("/tool/") else mock.responses
                    resp = queue.pop(0) if queue else None
                if resp is None:
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if resp.get("delayMs"):
                    threading.Event().wait(resp["delayMs"] / 1000)
                payload = b""
                ctype = None
                if resp.get("body") is not None and resp.get("bodyText") is None:
                    payload = json.dumps(resp["body"], separators=(",", ":"), ensure_ascii=False).encode("utf-8")
                    ctype = "application/json"
                elif resp.get("bodyText") is not None:
                    payload = resp["bodyText"].encode("utf-8")
                self.send_response(resp.get("status", 200))
                if ctype:
                    self.send_header("content-type", ctype)
                for k, v in (resp.get("headers") or {}).items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except OSError:
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # shutdown() waits for serve_forever's next poll: a short interval
        # keeps closing a case's server from costing half a second.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ---------------------------------------------------------------- comparison
def json_text_equal(a: str, b: str) -> tuple[bool, bool]:
    try:
        av, bv = json.loads(a), json.loads(b)
    except ValueError:
        return a == b, False
    return not compare("", av, bv, set(), set()), True


def compare(path: str, exp: Any, act: Any, volatile: set, text_at: set, json_strings: bool = False) -> list[str]:
    """Every difference of act from exp. Strings compare byte for byte,
    except under a key "arguments", at the paths in text_at and, with
    json_strings (op run), any string holding a JSON object or array: JSON
    text compares as the value it encodes."""
    if path in volatile:
        return []
    label = path or "(root)"
    if isinstance(exp, dict):
        if not isinstance(act, dict):
            return [f"{label}: got {act!r:.200}, want object"]
        diffs = []
        for k in sorted(exp):
            sub = f"{path}.{k}" if path else k
            if k not in act:
                if sub not in volatile:
                    diffs.append(f"{sub}: missing, want {json.dumps(exp[k])[:200]}")
                continue
            diffs += compare(sub, exp[k], act[k], volatile, text_at, json_strings)
        for k in sorted(act):
            if k not in exp:
                diffs.append(f"{(path + '.' if path else '') + k}: unexpected, got {json.dumps(act[k])[:200]}")
        return diffs
    if isinstance(exp, list):
        if not isinstance(act, list):
            return [f"{label}: got {act!r:.200}, want array"]
        if len(exp) != len(act):
            return [f"{label}: got {len(act)} elements, want {len(exp)}"]
        out: list[str] = []
        for i, (e, a) in enumerate(zip(exp, act)):
            out += compare(f"{path}.{i}" if path else str(i), e, a, volatile, text_at, json_strings)
        return out
    if isinstance(exp, str):
        if not isinstance(act, str):
            return [f"{label}: got {act!r:.200}, want string {exp!r:.200}"]
        json_text = json_strings and exp.startswith(("{", "["))
        if json_text or path in text_at or ("." + path).endswith(".arguments"):
            eq, both = json_text_equal(exp, act)
            if both:
                return [] if eq else [f"{label}: got JSON {act:.200}, want {exp:.200}"]
        return [] if act == exp else [f"{label}: got {act!r:.300}, want {exp!r:.300}"]
    if isinstance(exp, bool) or exp is None or isinstance(act, bool):
        return [] if exp is act or (exp == act and type(exp) is type(act)) else [f"{label}: got {act!r}, want {exp!r}"]
    if isinstance(exp, (int, float)):
        return [] if isinstance(act, (int, float)) and not isinstance(act, bool) and float(exp) == float(act) else [
            f"{label}: got {act!r}, want {exp!r}"
        ]
    return [] if exp == act else [f"{label}: got {act!r}, want {exp!r}"]


def rename_keys(v: Any, names: dict[str, str]) -> Any:
    if isinstance(v, dict):
        return {names.get(k, k): rename_keys(x, names) for k, x in v.items()}
    if isinstance(v, list):
        return [rename_keys(x, names) for x in v]
    return v


def headers_match(where: str, exp: dict, got: dict) -> list[str]:
    diffs = []
    for k in sorted(exp or {}):
        vals = got.get(k.lower(), [])
        if len(vals) != 1 or vals[0] != exp[k]:
            diffs.append(f"{where} header {k}: got {vals}, want {exp[k]!r}")
    return diffs


# ---------------------------------------------------------------- case runner
class Skip(Exception):
    pass


def output_is_json_text(case: dict) -> bool:
    tk = case.get("toolkit") or {}
    for h in tk.get("httpTools") or []:
        if isinstance(h, dict) and h.get("name") == case.get("name") and h.get("resultMode") == "json":
            return True
    if case.get("name") == "question":
        return True
    return bool(tk.get("mcpConfig")) and case.get("name") not in BUILTINS


def text_paths(case: dict) -> set:
    return {"output"} if case.get("op") == "execute" and output_is_json_text(case) else set()


def list_files(root: str) -> dict[str, str]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root).replace(os.sep, "/")] = fh.read().decode("utf-8", "replace")
    return out


def run_render(case: dict) -> list[str]:
    with tn.Toolkit(case.get("toolkit") or {}) as tk:
        fmt = "status" if case.get("format") == "mcpStatus" else case["format"]
        act = tk.render(fmt, case.get("toolOrder"))
    exp = case["expect"]
    if case.get("format") == "mcpStatus":
        diffs = compare("statuses", exp.get("statuses"), act.get("statuses"), set(), set())
        if set((exp.get("errors") or {})) != set((act.get("errors") or {})):
            diffs.append(f"errors: keys {sorted(act.get('errors') or {})}, want {sorted(exp.get('errors') or {})}")
        return diffs
    return compare("", exp, act, set(case.get("volatile") or []), set())


def run_load_skills(case: dict) -> list[str]:
    exp = case["expect"]
    diffs: list[str] = []
    with tn.Toolkit(case.get("toolkit") or {}) as tk:
        vol = set(case.get("volatile") or [])
        if "loaded" in exp:
            want = rename_keys(exp["loaded"], {"filter-unmatched": "filterUnmatched", "sample-limit": "sampleLimit"})
            diffs += compare("loaded", want, tk.render("skills"), vol, set())
        if "inventory" in exp:
            diffs += compare("inventory", exp["inventory"], tk.render("skillsInventory"), vol, set())
    return diffs


def run_execute(case: dict, root: str, srv: Optional[MockServer]) -> list[str]:
    tk = tn.Toolkit(case.get("toolkit") or {})
    try:
        ctx = case.get("ctx") or {}
        text = tk.execute_json(
            case["name"],
            case.get("args") if case.get("args") is not None else {},
            timeout=(ctx["timeoutMs"] / 1000) if "timeoutMs" in ctx else None,
            answer=ctx.get("answer"),
        )
    finally:
        tk.close()  # ends MCP children before the files are listed
    act = json.loads(text)
    exp = case["expect"]
    if case.get("hostSpecific") is not None:
        diffs = []
        if exp.get("isError") != act.get("isError"):
            diffs.append(f"isError: got {act.get('isError')}, want {exp.get('isError')} ({act.get('output')!r:.200})")
        m = EXIT_LINE.search(exp.get("output") or "")
        if m and not (act.get("output") or "").endswith(m.group(1)):
            diffs.append(f"output: got {act.get('output')!r:.200}, want it to end with {m.group(1)!r}")
    else:
        diffs = compare("", exp, act, set(case.get("volatile") or []), text_paths(case))
    if case.get("expectFiles") is not None:
        diffs += compare_files(case["expectFiles"], list_files(root), names_only=case.get("hostSpecific") is not None)
    if case.get("expectServerRequests") is not None:
        diffs += compare_server_requests(case["expectServerRequests"], srv.requests if srv else [])
    return diffs


def compare_files(want: dict[str, str], got: dict[str, str], names_only: bool) -> list[str]:
    diffs = []
    for name in sorted(want):
        if name not in got:
            diffs.append(f"expectFiles: {name} missing")
        elif not names_only and got[name] != want[name]:
            diffs.append(f"expectFiles: {name} = {got[name]!r:.200}, want {want[name]!r:.200}")
    return diffs + [f"expectFiles: unexpected file {n}" for n in sorted(set(got) - set(want))]


def compare_server_requests(want_reqs: list[dict], got_reqs: list[dict]) -> list[str]:
    if len(got_reqs) != len(want_reqs):
        return [f"server requests: got {len(got_reqs)}, want {len(want_reqs)}"]
    diffs: list[str] = []
    for i, (e, g) in enumerate(zip(want_reqs, got_reqs)):
        where = f"request[{i}]"
        for key in ("method", "path", "query"):
            if e.get(key) != g[key]:
                diffs.append(f"{where} {key}: got {g[key]!r}, want {e.get(key)!r}")
        diffs += headers_match(where, e.get("headers") or {}, g["headers"])
        if e.get("body") is not None:
            body = g["body"].decode("utf-8", "replace")
            is_json = any("json" in v.lower() for v in g["headers"].get("content-type", [])) or "json" in (
                (e.get("headers") or {}).get("content-type", "").lower()
            )
            if is_json:
                eq, both = json_text_equal(e["body"], body)
                if both:
                    if not eq:
                        diffs.append(f"{where} body: got {body:.200}, want {e['body']:.200}")
                    continue
            if body != e["body"]:
                diffs.append(f"{where} body: got {body!r:.200}, want {e['body']!r:.200}")
    return diffs


def run_helper(case: dict) -> list[str]:
    act = tn.helper(case["fn"], case.get("args") or [])
    text_at = {""} if case["fn"] == "argsString" else set()
    return compare("", case["expect"], act, set(case.get("volatile") or []), text_at)


def compare_provider_request(where: str, exp: dict, got: dict) -> list[str]:
    diffs = []
    for key in ("method", "path"):
        if exp.get(key) != got[key]:
            diffs.append(f"{where} {key}: got {got[key]!r}, want {exp.get(key)!r}")
    diffs += headers_match(where, exp.get("headers") or {}, got["headers"])
    if "body" in exp:
        try:
            act = json.loads(got["body"])
        except ValueError:
            return diffs + [f"{where} body is not JSON: {got['body'][:200]!r}"]
        diffs += compare(where + ".body", exp["body"], act, set(), set())
    return diffs


def run_translate(case: dict, srv: Optional[MockServer]) -> list[str]:
    exp = case["expect"]
    result = exp.get("result") or {}
    request = dict(case.get("request") or {})
    tk_config = request.pop("toolkit", None)
    tk = tn.Toolkit(tk_config) if tk_config is not None else None
    diffs: list[str] = []
    try:
        try:
            out: Optional[dict] = tn.translate(case["client"], request, tk)
            err: Optional[tn.ToolnexusError] = None
        except tn.ToolnexusError as e:
            out, err = None, e
    finally:
        if tk:
            tk.close()
    if "error" in result and len(result) == 1:
        if err is None:
            diffs.append(f"want failure {result['error']!r}, got result {json.dumps(out)[:200]}")
        elif err.code not in ("provider_error", "timeout"):
            diffs.append(f"want provider_error or timeout, got {err}")
        elif case.get("hostSpecific") is None:
            m = LLM_STATUS.match(result["error"] or "")
            if m and (m.group(1) not in err.message or m.group(2) not in err.message):
                diffs.append(f"error message {err.message!r} does not carry status {m.group(1)} and body {m.group(2)!r}")
    else:
        if err is not None:
            raise err
        assert out is not None
        out.pop("raw", None)
        want = rename_keys(result, {"prompt-tokens": "promptTokens", "completion-tokens": "completionTokens",
                                    "total-tokens": "totalTokens"})
        diffs += compare("result", want, out, set(case.get("volatile") or []), set())
    got = srv.requests if srv else []
    if isinstance(exp.get("providerRequests"), list):
        want_list = exp["providerRequests"]
        if len(want_list) != len(got):
            diffs.append(f"provider requests: got {len(got)}, want {len(want_list)}")
        else:
            for i, (e, g) in enumerate(zip(want_list, got)):
                diffs += compare_provider_request(f"providerRequests[{i}]", e, g)
    elif "providerRequest" in exp:
        pr = exp["providerRequest"]
        if pr is None and got:
            diffs.append(f"provider requests: got {len(got)}, want none")
        elif pr is not None and len(got) != 1:
            diffs.append(f"provider requests: got {len(got)}, want 1")
        elif pr is not None:
            diffs += compare_provider_request("providerRequest", pr, got[0])
    return diffs


class RunLog:
    """What a run's hooks and waitFor saw; a turn's tool calls run in
    parallel, so appends are locked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hooks: list[dict[str, Any]] = []
        self.waits: list[Any] = []

    def hook(self, name: str, event: Any) -> dict[str, Any]:
        ev = event if isinstance(event, dict) else {}
        with self.lock:
            self.hooks.append({"hook": name, **ev})
        return ev


def rule_reply(rules: list[dict], event: dict) -> Optional[dict]:
    """The first rule matching the event (its optional name and turn),
    without those keys; None when none matches."""
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        if "name" in rule and rule["name"] != event.get("name"):
            continue
        if "turn" in rule and not (isinstance(event.get("turn"), (int, float)) and float(rule["turn"]) == float(
                event["turn"])):
            continue
        return {k: v for k, v in rule.items() if k not in ("name", "turn")}
    return None


def hooks_for(case: dict, log: RunLog) -> dict[str, Any]:
    spec = case.get("hooks") or {}
    hooks: dict[str, Any] = {}
    if "beforeLLM" in spec:
        hooks["before_llm"] = lambda ev: rule_reply(spec["beforeLLM"], log.hook("beforeLLM", ev))
    if "afterLLM" in spec:
        hooks["after_llm"] = lambda ev: rule_reply(spec["afterLLM"], log.hook("afterLLM", ev)) and None
    if "beforeTool" in spec:
        hooks["before_tool"] = lambda ev: rule_reply(spec["beforeTool"], log.hook("beforeTool", ev))

    def after_tool(ev: Any) -> Any:
        r = rule_reply(spec["afterTool"], log.hook("afterTool", ev))
        return r["result"] if r and r.get("result") is not None else None

    if "afterTool" in spec:
        hooks["after_tool"] = after_tool
    return hooks


def wait_for_of(spec: Any, log: RunLog) -> Any:
    """waitFor as data: {answer} for every Request, or {answers} in order
    (the last repeats); the Answer is {id, ok, data?, reason? (not ok)}."""
    if not isinstance(spec, dict):
        return None
    answers = [spec["answer"]] if "answer" in spec else list(spec.get("answers") or [])

    def wait_for(req: "tn.Request") -> dict[str, Any]:
        with log.lock:
            seen = len(log.waits)
            log.waits.append(req.raw)
        given = answers[min(seen, len(answers) - 1)] if answers else {}
        ok = given.get("ok") is True
        out: dict[str, Any] = {"id": req.id, "ok": ok}
        if given.get("data") is not None:
            out["data"] = given["data"]
        if not ok and given.get("reason"):
            out["reason"] = given["reason"]
        return out

    return wait_for


HOOK_RANK = {"beforeLLM": 0, "afterLLM": 1, "beforeTool": 2, "afterTool": 3}


def drop_null_metadata(v: Any) -> Any:
    """``metadata: null`` is the same as no metadata."""
    if isinstance(v, dict):
        return {k: drop_null_metadata(x) for k, x in v.items() if not (k == "metadata" and x is None)}
    if isinstance(v, list):
        return [drop_null_metadata(x) for x in v]
    return v


def run_run(case: dict, root: str, srv: Optional[MockServer]) -> list[str]:
    exp = case["expect"]
    vol = set(case.get("volatile") or [])
    log = RunLog()
    tk = tn.Toolkit(case.get("toolkit") or {})
    run_err: Optional[tn.ToolnexusError] = None
    out: Optional[tn.RunResult] = None
    try:
        with tn.Client(case.get("client") or {}, hooks=hooks_for(case, log),
                       wait_for=wait_for_of(case.get("waitFor"), log)) as client:
            try:
                out = client.run(tk, case.get("prompt", ""), history=case.get("history"))
            except tn.ToolnexusError as e:
                if e.code not in ("provider_error", "timeout"):
                    raise
                run_err = e
    finally:
        tk.close()  # ends MCP children before the files are listed
    diffs: list[str] = []
    result = exp.get("result") or {}
    if "error" in result and len(result) == 1:
        if run_err is None:
            diffs.append(f"want failure {result['error']!r}, got result {json.dumps(out.raw if out else None)[:200]}")
        else:
            m = LLM_STATUS.match(result["error"] or "")
            if m and (m.group(1) not in run_err.message or m.group(2) not in run_err.message):
                diffs.append(f"error message {run_err.message!r} does not carry status {m.group(1)} "
                             f"and body {m.group(2)!r}")
    else:
        if run_err is not None:
            raise run_err
        assert out is not None
        want = rename_keys(result, {"tool-calls": "toolCalls", "tool-call-count": "toolCallCount",
                                    "prompt-tokens": "promptTokens", "completion-tokens": "completionTokens",
                                    "total-tokens": "totalTokens"})
        diffs += compare("result", drop_null_metadata(want), drop_null_metadata(out.raw), vol, set(), True)
    if "waitForRequests" in exp:
        diffs += compare("waitForRequests", exp["waitForRequests"], list(log.waits), vol, set(), True)
    if "hookCalls" in exp:
        got_hooks = sorted(log.hooks, key=lambda h: (float(h.get("turn") or 0), HOOK_RANK.get(h.get("hook"), 9),
                                                     str(h.get("id"))))
        diffs += compare("hookCalls", drop_null_metadata(exp["hookCalls"]), drop_null_metadata(got_hooks), vol,
                         set(), True)
    recorded = srv.requests if srv else []
    provider = [r for r in recorded if not r["path"].startswith("/tool/")]
    tools = [r for r in recorded if r["path"].startswith("/tool/")]
    want_list = exp.get("providerRequests") or []
    if len(want_list) != len(provider):
        diffs.append(f"provider requests: got {len(provider)}, want {len(want_list)}")
    else:
        for i, (e, g) in enumerate(zip(want_list, provider)):
            diffs += compare_provider_request(f"providerRequests[{i}]", e, g)
    if case.get("expectServerRequests") is not None:
        diffs += compare_server_requests(case["expectServerRequests"], tools)
    if case.get("expectFiles") is not None:
        diffs += compare_files(case["expectFiles"], list_files(root), names_only=False)
    return diffs


OPS = {"render", "loadSkills", "execute", "helper", "translate", "run"}


def run_case(raw_case: dict) -> tuple[str, str]:
    """("pass" | "fail" | "skip", why)."""
    if raw_case.get("op") not in OPS:
        return "skip", f"op {raw_case.get('op')} is not run by this harness yet"
    scratch = tempfile.mkdtemp(prefix="tnparity-py-")
    root = os.path.realpath(scratch)
    srv: Optional[MockServer] = None
    saved_env: dict[str, Optional[str]] = {}
    cwd = os.getcwd()
    try:
        text = json.dumps(raw_case).replace("${ROOT}", json.dumps(root)[1:-1])
        probe = json.loads(text)
        wants_server = any(k in probe for k in ("serverResponse", "serverResponses", "providerResponse",
                                                "providerResponses")) or "${BASE}" in text
        if wants_server:
            srv = MockServer()
            text = text.replace("${BASE}", srv.base)
        case = json.loads(text)
        if srv and case.get("op") == "run":
            srv.routed = True
            srv.tool_responses = list(case.get("serverResponses") or [])
            srv.responses = list(case.get("providerResponses") or [])
        elif srv:
            for key in ("serverResponse", "providerResponse"):
                if isinstance(case.get(key), dict):
                    srv.responses.append(case[key])
            for key in ("serverResponses", "providerResponses"):
                srv.responses += case.get(key) or []
        for rel, content in (case.get("files") or {}).items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8", newline="") as f:
                f.write(content)
            if content.startswith("#!"):
                os.chmod(p, 0o755)
        for rel, target in (case.get("symlinks") or {}).items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            os.symlink(target, p)
        for k, v in (case.get("env") or {}).items():
            saved_env[k] = os.environ.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        os.chdir(root)
        op = case["op"]
        if op == "render":
            diffs = run_render(case)
        elif op == "loadSkills":
            diffs = run_load_skills(case)
        elif op == "execute":
            diffs = run_execute(case, root, srv)
        elif op == "helper":
            diffs = run_helper(case)
        elif op == "run":
            diffs = run_run(case, root, srv)
        else:
            diffs = run_translate(case, srv)
    except tn.ToolnexusError as e:
        if re.search(r"not (yet )?(implemented|supported)", e.message, re.I):
            return "skip", str(e)
        return "fail", f"  {e}"
    finally:
        os.chdir(cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if srv:
            srv.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if diffs:
        more = [f"... and {len(diffs) - 8} more"] if len(diffs) > 8 else []
        return "fail", "  " + "\n  ".join(diffs[:8] + more)
    return "pass", ""


def divergence_ids(path: Path) -> set[str]:
    try:
        return set(json.loads(path.read_text())["divergences"])
    except FileNotFoundError:
        return set()


def main() -> int:
    vec_dir = Path(os.environ.get("TN_CONFORMANCE_DIR") or REPO / "tests" / "conformance" / "vectors")
    div: set[str] = set()
    for p in (vec_dir / "divergences.json", vec_dir.parent / "divergences.json"):
        div |= divergence_ids(p)
    if not div:
        div = divergence_ids(REPO / "tests" / "conformance" / "divergences.json")
    proposed = divergence_ids(REPO / "tests" / "conformance" / "proposed-divergences.json")
    for p in (vec_dir / "proposed-divergences.json", vec_dir.parent / "proposed-divergences.json"):
        proposed |= divergence_ids(p)
    files = sorted(
        p for p in vec_dir.rglob("*.json") if p.name not in ("divergences.json", "proposed-divergences.json")
    )
    if not files:
        print(f"no vector files under {vec_dir}")
        return 1
    total = {"pass": 0, "fail": 0, "div": 0, "skip": 0, "proposed": 0}
    failures = []
    for f in files:
        doc = json.loads(f.read_text())
        cases = doc["cases"] if isinstance(doc, dict) else doc
        t = dict.fromkeys(total, 0)
        for c in cases:
            cid = c.get("id", "")
            if cid in div:
                t["div"] += 1
                continue
            if cid in proposed:
                t["proposed"] += 1
                continue
            outcome, why = run_case(c)
            t[outcome] += 1
            if outcome == "fail":
                failures.append(f"FAIL {cid}\n{why}")
            elif outcome == "skip" and os.environ.get("TN_PARITY_VERBOSE"):
                print(f"skip {cid}: {why}")
        print(f"parity[{f.relative_to(vec_dir)}]: {t['pass']} passed, {t['fail']} failed, {t['div']} divergences, "
              f"{t['skip']} skipped, {t['proposed']} proposed")
        for k in total:
            total[k] += t[k]
    for line in failures:
        print(line)
    print(f"parity: {total['pass']} passed, {total['fail']} failed, {total['div']} divergences, "
          f"{total['skip']} skipped ({total['proposed']} proposed divergences)")
    return 1 if total["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
