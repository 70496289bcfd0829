"""count_tokens (tn_count_tokens, CONTRACT §6A) against a mock provider on
127.0.0.1: the count read back and the call it made (per style), a provider
error as ProviderError, a bad client as InvalidConfigError."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import MockServer, tn  # noqa: E402

REQUEST = {"messages": [{"role": "user", "content": "Hi"}], "maxTokens": 100}


@pytest.fixture()
def srv():
    server = MockServer()
    yield server
    server.close()


def test_count_tokens_anthropic_style(srv):
    srv.responses.append({"status": 200, "body": {"input_tokens": 42}})
    client = {"baseUrl": srv.base, "style": "anthropic", "model": "claude-test", "apiKey": "sk-test", "retries": 0}
    with tn.Toolkit({"builtins": {"tools": {"bash": True}}}) as tk:
        out = tn.count_tokens(client, REQUEST, toolkit=tk)
    assert out == {"inputTokens": 42, "style": "anthropic", "model": "claude-test"}
    [req] = srv.requests
    assert (req["method"], req["path"]) == ("POST", "/v1/messages/count_tokens")
    assert req["headers"]["x-api-key"] == ["sk-test"]
    sent = json.loads(req["body"])
    # The toolkit's tools are counted; the generation-only max_tokens is not sent.
    assert sent["model"] == "claude-test" and "max_tokens" not in sent
    assert any(t["name"] == "bash" for t in sent["tools"])


def test_count_tokens_chat_style_counts_at_responses_input_tokens(srv):
    srv.responses.append({"status": 200, "body": {"object": "response.input_tokens", "input_tokens": 9}})
    client = {"baseUrl": srv.base + "/v1", "model": "gpt-test", "apiKey": "sk-test", "retries": 0}
    out = tn.count_tokens(client, json.dumps(REQUEST))
    assert out == {"inputTokens": 9, "style": "openai", "model": "gpt-test"}
    assert [r["path"] for r in srv.requests] == ["/v1/responses/input_tokens"]


def test_count_tokens_provider_error_is_typed(srv):
    srv.responses.append({"status": 404, "bodyText": "no such model"})
    client = {"baseUrl": srv.base, "style": "anthropic", "model": "m", "apiKey": "k", "retries": 0}
    with pytest.raises(tn.ProviderError) as e:
        tn.count_tokens(client, REQUEST)
    assert "404" in e.value.message and "no such model" in e.value.message


def test_count_tokens_bad_client_is_invalid_config():
    with pytest.raises(tn.InvalidConfigError):
        tn.count_tokens({"baseUrl": "http://127.0.0.1:1", "style": "cohere", "model": "m"}, REQUEST)


def test_count_tokens_cancelled_token_is_not_sent(srv):
    token = tn.CancelToken()
    token.cancel()
    with pytest.raises(tn.CancelledError):
        tn.count_tokens({"baseUrl": srv.base, "style": "anthropic", "model": "m"}, REQUEST, cancel=token)
    assert srv.requests == []
