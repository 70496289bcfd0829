"""Client(http_client=...) (the httpClient slot, SPEC §8 Gap 2) with the
typed HTTPRequest and HTTPResponse: runs whose LLM calls go through a
Python function, forwarded by HTTPRequest.send to a mock provider on
127.0.0.1 that records what it received."""
from __future__ import annotations

import dataclasses
import json
import sys
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import MockServer, tn  # noqa: E402

UNREACHABLE = "http://provider.invalid"
# Straight to 127.0.0.1, whatever proxies the environment names.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def text(t):
    return {"status": 200, "body": {"choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": t}}]}}


def sse(*deltas):
    events = [{"choices": [{"index": 0, "delta": {"content": d}}]} for d in deltas]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return {"status": 200, "bodyText": body, "headers": {"content-type": "text/event-stream"}}


@pytest.fixture
def srv():
    s = MockServer()
    yield s
    s.close()


class ViaPython:
    """An http_client that keeps each HTTPRequest, then sends it to the mock
    in place of the client's unreachable host, with a header the library
    never sets; ``answer(n)``, when set, answers attempt n itself."""

    def __init__(self, srv):
        self.srv = srv
        self.requests: list[tn.HTTPRequest] = []
        self.answer = None

    def __call__(self, req: tn.HTTPRequest):
        self.requests.append(req)
        if self.answer is not None:
            r = self.answer(len(self.requests))
            if r is not None:
                return r
        routed = dataclasses.replace(req, url=req.url.replace(UNREACHABLE, self.srv.base),
                                     headers={**req.headers, "x-via": "python"})
        return routed.send(timeout=10, opener=DIRECT)


def client(via, **extra):
    cfg = {"baseUrl": UNREACHABLE + "/v1", "style": "openai", "model": "m", "apiKey": "sk-py", "retries": 0, **extra}
    return tn.Client(cfg, http_client=via)


def test_a_run_goes_through_http_client_to_the_provider(srv):
    srv.responses.append(text("via python"))
    via = ViaPython(srv)
    with client(via) as c:
        r = c.run(None, "hi there")
    assert (r.text, r.status) == ("via python", "done")
    [req] = via.requests
    assert (req.method, req.url, req.stream) == ("POST", UNREACHABLE + "/v1/chat/completions", False)
    assert req.headers["authorization"] == "Bearer sk-py"
    body = req.json()
    assert body["model"] == "m" and body["messages"][-1] == {"role": "user", "content": "hi there"}
    assert req.raw["body"] == req.body
    # What the provider received: the library's body byte for byte, the
    # client's credentials and the function's own header.
    [got] = srv.requests
    assert (got["method"], got["path"]) == ("POST", "/v1/chat/completions")
    assert got["headers"]["authorization"] == ["Bearer sk-py"]
    assert got["headers"]["x-via"] == ["python"]
    assert got["body"] == req.body.encode("utf-8")


def test_a_429_answered_by_the_function_is_retried_and_a_stream_flows(srv):
    srv.responses.append(sse("via ", "python"))
    via = ViaPython(srv)
    via.answer = lambda n: tn.HTTPResponse(429, b'{"error":{"message":"slow down"}}', {"Retry-After": "0"}) \
        if n == 1 else None
    deltas = []
    with client(via, retries=2, retryBaseMs=1) as c:
        r = c.stream(None, "hi", on_event=lambda ev: deltas.append(ev["delta"]) if ev["type"] == "text" else None)
    assert r.text == "via python" and deltas == ["via ", "python"]
    assert [q.stream for q in via.requests] == [True, True]
    [got] = srv.requests
    assert json.loads(got["body"])["stream"] is True


def test_a_dict_answer_is_taken_as_is(srv):
    via = ViaPython(srv)
    via.answer = lambda n: {"status": 200, "body": text("from a dict")["body"]}
    with client(via) as c:
        assert c.run(None, "hi").text == "from a dict"
    assert srv.requests == []


def test_failures_of_http_client_end_the_run(srv):
    via = ViaPython(srv)

    def refuse(n):
        raise ConnectionRefusedError("no route to the provider")

    via.answer = refuse
    with client(via) as c:
        with pytest.raises(tn.CallbackError) as e:
            c.run(None, "hi")
        assert "httpClient" in e.value.message
        assert isinstance(e.value.__cause__, ConnectionRefusedError)

        # Not an answer at all.
        via.answer = lambda n: "200 OK"
        with pytest.raises(tn.CallbackError) as e:
            c.run(None, "hi")
        assert isinstance(e.value.__cause__, TypeError)

        # No status from 100 to 599.
        via.answer = lambda n: tn.HTTPResponse(0)
        with pytest.raises(tn.CallbackError) as e:
            c.run(None, "hi")
        assert "status" in e.value.message

        # The provider's error status, answered through the function.
        via.answer = lambda n: tn.HTTPResponse(400, '{"error":{"message":"bad model"}}')
        with pytest.raises(tn.ProviderError) as pe:
            c.run(None, "hi")
        assert "bad model" in pe.value.message
    assert srv.requests == []


def test_http_client_is_refused_where_it_cannot_apply():
    with pytest.raises(ValueError):
        tn.Client({"model": "m"}, generate=lambda ev: "hi", http_client=lambda req: None)
    with pytest.raises(TypeError):
        tn.Client({"baseUrl": UNREACHABLE, "model": "m"}, http_client="not callable")
