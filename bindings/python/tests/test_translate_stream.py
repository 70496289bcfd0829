"""translate_stream: a streamed Anthropic answer from a mock server on
127.0.0.1 comes back through the callback as OpenAI chat.completion.chunk
events (role first, a tool call's pieces by index, finish_reason last, the
usage chunk, [DONE]); returning False stops it; an exception in the
callback is raised."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from parity import tn  # noqa: E402  (the package, installed or from src)

EVENTS = [
    {"type": "message_start", "message": {"usage": {"input_tokens": 4, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Adding."}},
    {"type": "content_block_start", "index": 1,
     "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " 2}"}},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop"},
]


class Replay(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in EVENTS).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def client():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"baseUrl": f"http://127.0.0.1:{server.server_port}", "style": "anthropic",
           "model": "claude", "apiKey": "test-key-7", "retries": 0}
    server.shutdown()


REQUEST = {"messages": [{"role": "user", "content": "add"}]}


def test_chunks_come_through_the_callback(client):
    chunks: list[str] = []
    summary = tn.translate_stream(client, REQUEST, chunks.append)
    assert summary["finishReason"] == "tool_calls"
    assert summary["chunks"] == len(chunks)
    assert chunks[-1] == "data: [DONE]\n\n"
    events = [json.loads(c[len("data: "):]) for c in chunks[:-1]]
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    assert len({e["id"] for e in events}) == 1
    args = "".join(
        tc["function"].get("arguments", "")
        for e in events if e["choices"]
        for tc in e["choices"][0]["delta"].get("tool_calls", [])
    )
    assert json.loads(args) == {"a": 2}
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 9
    finishes = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    assert finishes[-1] == "tool_calls" and not any(finishes[:-1])


def test_false_stops_and_an_exception_is_raised(client):
    seen: list[str] = []

    def two(chunk):
        seen.append(chunk)
        return len(seen) < 2 or False

    with pytest.raises(tn.CancelledError):
        tn.translate_stream(client, REQUEST, two)
    assert len(seen) == 2

    def boom(chunk):
        raise ValueError("no thanks")

    with pytest.raises(ValueError, match="no thanks"):
        tn.translate_stream(client, REQUEST, boom)
