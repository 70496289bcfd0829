"""Host stores from Python (issue 27): a Python object registered with
register_store keeps ask's conversations under the selector host:<name>;
refused registrations, failures and garbage named by the store; the store
kept past unregister_store until its last user is closed."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from parity import tn  # noqa: E402
from toolnexus_rs import store as tn_store  # noqa: E402


class Records:
    """Records in a dict; ``fail`` makes one operation fail its own way."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: dict[tuple[str, str], object] = {}
        self.fail = ""

    def get(self, kind, id):  # noqa: A002
        if self.fail == "garbage":
            return object()  # not JSON
        with self.lock:
            return self.records.get((kind, id))

    def save(self, kind, id, record):  # noqa: A002
        if self.fail == "save":
            raise OSError("disk full")
        with self.lock:
            self.records[(kind, id)] = record

    def delete(self, kind, id):  # noqa: A002
        with self.lock:
            return self.records.pop((kind, id), None) is not None


def generate(ev):
    users = [m for m in ev["messages"] if m.get("role") == "user"]
    return f"users={len(users)}"


def test_a_registered_store_keeps_asks_conversations_and_names_itself_when_it_fails():
    records = Records()
    before = tn_store._live_count()
    tn.register_store("py-records", records)
    with pytest.raises(tn.InvalidArgumentError) as e:
        tn.register_store("py-records", Records())
    assert "already registered" in e.value.message
    with pytest.raises(tn.InvalidArgumentError):
        tn.register_store("", Records())
    with pytest.raises(TypeError):
        tn.register_store("py-nothing", object())
    assert tn_store._live_count() == before + 1, "refused stores are released at once"

    with pytest.raises(tn.InvalidConfigError) as e:
        tn.Client({"model": "local", "store": "host:py-nobody"}, generate=generate)
    assert "host:py-nobody" in e.value.message

    client = tn.Client({"model": "local", "store": "host:py-records"}, generate=generate)
    assert client.store is None, "the config's store, not a Python one"
    # Unregistered while the client holds it: the client keeps it.
    tn.unregister_store("py-records")
    with pytest.raises(tn.InvalidArgumentError):
        tn.unregister_store("py-records")
    try:
        assert client.ask(None, "conv-1", "first").text == "users=1"
        assert client.ask(None, "conv-1", "second").text == "users=2"
        saved = records.records[("conversation", "conv-1")]
        assert [m["role"] for m in saved] == ["user", "assistant", "user", "assistant"]
        assert saved[2]["content"] == "second"

        records.fail = "save"
        with pytest.raises(tn.CallbackError) as e:
            client.ask(None, "conv-1", "third")
        assert 'store "host:py-records": save failed: OSError: disk full' in e.value.message
        records.fail = "garbage"
        with pytest.raises(tn.CallbackError) as e:
            client.ask(None, "conv-1", "third")
        assert 'store "host:py-records": get failed: TypeError' in e.value.message
        records.fail = ""
        assert client.ask(None, "conv-1", "fourth").text == "users=3"
        assert tn_store._live_count() == before + 1
    finally:
        client.close()
    assert tn_store._live_count() == before, "released with its last user"
    # The name is free again.
    tn.register_store("py-records", Records())
    tn.unregister_store("py-records")
    assert tn_store._live_count() == before
