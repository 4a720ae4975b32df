"""The read of a `previous_response_id` chain is a store operation like the others: on the
`ResponseStore` protocol, timed in `/metrics`, and counted in `store_errors_total` when it fails."""

from __future__ import annotations

import httpx
from openresponses_runtime.server import DemoProvider, MemoryStore, SQLiteStore, StoreUnavailable, create_app
from prometheus_client.parser import text_string_to_metric_families

from ..server_helpers import API_KEY, live_server, metrics_text, observed

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


def store_samples(root: str) -> dict[tuple[str, str, str], float]:
    """The store's samples of `/metrics`: (name, operation, kind) -> value."""
    text = metrics_text(root)
    return {
        (sample.name, sample.labels.get("operation", ""), sample.labels.get("kind", "")): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("openresponses_store_")
    }


def two_turns(base: str) -> httpx.Response:
    first = httpx.post(base + "/responses", json={"input": "one"}, headers=HEADERS, timeout=30)
    assert first.status_code == 200
    body = {"input": "two", "previous_response_id": first.json()["id"]}
    return httpx.post(base + "/responses", json=body, headers=HEADERS, timeout=30)


def test_a_two_turn_conversation_shows_its_chain_read_in_the_metrics(tmp_path):
    store = SQLiteStore(tmp_path / "responses.sqlite3")  # reads a chain in one query
    app = create_app(DemoProvider(delay=0), store=store, api_keys=API_KEY, observability=observed())
    with live_server(app) as base:
        assert two_turns(base).status_code == 200
        samples = store_samples(base.removesuffix("/v1"))
    count = "openresponses_store_operation_seconds_count"
    assert samples[count, "chain", ""] == 1  # the second turn's history, in one read
    assert samples[count, "put", ""] == 2
    assert samples[count, "get", ""] == 0


class ChainDown(MemoryStore):
    """A store whose chain reads fail as a database that is down fails them."""

    async def chain(self, response_id):
        raise StoreUnavailable()


def test_a_failed_chain_read_is_counted_as_a_store_error():
    app = create_app(DemoProvider(delay=0), store=ChainDown(), api_keys=API_KEY, observability=observed())
    with live_server(app) as base:
        answer = two_turns(base)
        samples = store_samples(base.removesuffix("/v1"))
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "store_unavailable"
    assert samples["openresponses_store_errors_total", "chain", "unavailable"] == 1
    assert samples["openresponses_store_operation_seconds_count", "chain", ""] == 1


class Minimal:
    """A store of only `get`, `put` and `delete`, as one written before the protocol asked more."""

    def __init__(self):
        self.records = {}

    async def get(self, response_id):
        return self.records.get(response_id)

    async def put(self, record):
        self.records[record.id] = record

    async def delete(self, response_id):
        return self.records.pop(response_id, None) is not None


def test_a_store_of_get_put_and_delete_still_serves_and_its_chain_is_timed():
    app = create_app(DemoProvider(delay=0), store=Minimal(), api_keys=API_KEY, observability=observed())
    with live_server(app) as base:
        second = two_turns(base)
        samples = store_samples(base.removesuffix("/v1"))
    assert second.status_code == 200
    count = "openresponses_store_operation_seconds_count"
    assert samples[count, "chain", ""] == 1  # walked by `get`s, which the chain's timing includes
    assert samples[count, "put", ""] == 2
