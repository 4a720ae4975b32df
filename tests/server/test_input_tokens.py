"""`POST /responses/input_tokens` on the server: the demo's count is the `usage.input_tokens` the same
body's response reports, earlier turns included; a provider that cannot count answers 501."""

from __future__ import annotations

import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from starlette.testclient import TestClient

from ..server_helpers import API_KEY, StepsProvider

KEY = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture
def demo():
    with TestClient(create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY)) as client:
        yield client


def test_the_demo_counts_what_its_response_reports_as_input_tokens(demo):
    body = {"model": "m", "input": [{"type": "message", "role": "user", "content": "Write a haiku about the sea."}]}
    counted = demo.post("/v1/responses/input_tokens", json=body, headers=KEY)
    assert counted.status_code == 200, counted.text
    assert set(counted.json()) == {"object", "input_tokens"} and counted.json()["object"] == "response.input_tokens"
    created = demo.post("/v1/responses", json=body, headers=KEY).json()
    assert counted.json()["input_tokens"] == created["usage"]["input_tokens"]

    follow = {"model": "m", "previous_response_id": created["id"], "input": "And another?"}
    alone = demo.post("/v1/responses/input_tokens", json={"model": "m", "input": "And another?"}, headers=KEY)
    continued = demo.post("/v1/responses/input_tokens", json=follow, headers=KEY)
    assert continued.json()["input_tokens"] > alone.json()["input_tokens"]  # the earlier turn counts too
    assert (
        continued.json()["input_tokens"]
        == demo.post("/v1/responses", json=follow, headers=KEY).json()["usage"]["input_tokens"]
    )


def test_a_count_is_checked_as_a_create_is(demo):
    assert demo.post("/v1/responses/input_tokens", json={"input": "hi"}).status_code == 401
    wrong = demo.post("/v1/responses/input_tokens", json={"input": 3}, headers=KEY)
    assert wrong.status_code == 400 and wrong.json()["error"]["param"].startswith("input")
    missing = demo.post("/v1/responses/input_tokens", json={"previous_response_id": "resp_none"}, headers=KEY)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "previous_response_not_found"
    assert demo.get("/v1/responses/input_tokens", headers=KEY).status_code == 404  # a GET is a retrieve of that id


def test_a_provider_that_cannot_count_answers_501():
    with TestClient(create_app(StepsProvider(), store=MemoryStore(), api_keys=API_KEY)) as client:
        answer = client.post("/v1/responses/input_tokens", json={"input": "hi"}, headers=KEY)
    assert answer.status_code == 501
    assert answer.json()["error"] == {
        "type": "server_error",
        "code": "not_implemented",
        "param": None,
        "message": "This server's model cannot count input tokens.",
    }
