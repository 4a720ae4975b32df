"""Reasoning that round-trips without a store: with `include: ["reasoning.encrypted_content"]` the
server seals each reasoning item for the client to carry, and unseals it when the item comes back
(`openresponses_runtime.server.sealing`), driven with the official openai SDK."""

from __future__ import annotations

import sys

import openai
import pytest
from openresponses_runtime.server import BrokenSeal, MemoryStore, ReasoningSummary, Sealer, TextDelta, create_app
from websockets.sync.client import connect

from ..server_helpers import API_KEY, RecordingProvider, StepsProvider, free_port, live_server, served_process, ws_turn

INCLUDE = ["reasoning.encrypted_content"]
REASONING = {"effort": "low", "summary": "auto"}


def client_for(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0)


def turn_one(client: openai.OpenAI, **options):
    return client.responses.create(
        model="demo", input="Say hello", reasoning=REASONING, include=INCLUDE, store=False, **options
    )


def carried(response) -> list[dict]:
    """A response's output as a client sends it back as input."""
    return [item.model_dump(exclude_none=True) for item in response.output]


def turn_two(client: openai.OpenAI, items: list[dict]):
    follow_up = {"type": "message", "role": "user", "content": "And again"}
    return client.responses.create(model="demo", input=[*items, follow_up], include=INCLUDE, store=False)


@pytest.fixture(scope="module")
def provider():
    return RecordingProvider()


@pytest.fixture(scope="module")
def server(provider):
    app = create_app(provider, store=MemoryStore(), api_keys=API_KEY, debug=True, reasoning_key="the server's key")
    with live_server(app) as base:
        yield base


def test_a_stateless_two_turn_conversation_hands_the_provider_its_reasoning_back(server, provider):
    client = client_for(server)
    first = turn_one(client)
    reasoning = first.output[0]
    assert reasoning.type == "reasoning" and reasoning.encrypted_content
    summary = reasoning.summary[0].text
    assert summary not in reasoning.encrypted_content  # sealed, not merely encoded

    items = carried(first)
    items[0]["summary"] = [{"type": "summary_text", "text": "a client's edit"}]  # the blob is what counts
    second = turn_two(client, items)
    assert second.status == "completed"
    handed = provider.requests[-1].input[0]
    assert handed == {"type": "reasoning", "id": reasoning.id, "summary": [{"type": "summary_text", "text": summary}]}


def test_a_streamed_turn_seals_its_reasoning_in_every_event_that_carries_the_item(server, provider):
    client = client_for(server)
    with client.responses.stream(
        model="demo", input="Say hello", reasoning=REASONING, include=INCLUDE, store=False
    ) as stream:
        events = list(stream)
    reasoning = [e.item for e in events if e.type.startswith("response.output_item.") and e.item.type == "reasoning"]
    final = events[-1].response
    assert len(reasoning) == 2  # added and done
    assert {item.encrypted_content for item in reasoning} == {final.output[0].encrypted_content}
    turn_two(client, carried(final))
    assert provider.requests[-1].input[0]["summary"] == [
        {"type": "summary_text", "text": final.output[0].summary[0].text}
    ]


def test_a_reasoning_item_sent_back_without_its_id_opens_as_its_own(server, provider):
    """Codex sends reasoning items back without `id`: the blob says which item it was sealed for."""
    client = client_for(server)
    first = turn_one(client)
    items = carried(first)
    del items[0]["id"]
    turn_two(client, items)
    assert provider.requests[-1].input[0]["id"] == first.output[0].id


def test_websocket_turns_carry_sealed_reasoning_and_refuse_a_broken_one(server, provider):
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with connect(server.replace("http", "ws") + "/responses", additional_headers=headers) as ws:
        first = ws_turn(ws, input="Say hello", reasoning=REASONING, include=INCLUDE, store=False)[-1]["response"]
        item = first["output"][0]
        assert item["type"] == "reasoning" and item["encrypted_content"]
        ws_turn(ws, input=[item, {"type": "message", "role": "user", "content": "And again"}], store=False)
        assert provider.requests[-1].input[0] == {
            k: v for k, v in item.items() if k not in ("encrypted_content", "status")
        }
        broken = {**item, "encrypted_content": item["encrypted_content"][:-2]}
        (error,) = ws_turn(ws, input=[broken], store=False)
    assert (error["status"], error["error"]["code"], error["error"]["param"]) == (
        400,
        "invalid_encrypted_content",
        "input[0].encrypted_content",
    )


def test_without_include_reasoning_items_carry_nothing(server):
    response = client_for(server).responses.create(model="demo", input="Say hello", reasoning=REASONING, store=False)
    assert response.output[0].type == "reasoning"
    assert response.output[0].encrypted_content is None


def test_a_tampered_blob_is_refused_naming_the_item(server):
    client = client_for(server)
    items = carried(turn_one(client))
    blob = items[0]["encrypted_content"]
    items[0]["encrypted_content"] = blob[:-4] + ("AAAA" if blob[-4:] != "AAAA" else "BBBB")
    with pytest.raises(openai.BadRequestError) as info:
        turn_two(client, [{"type": "message", "role": "user", "content": "Hi"}, *items])
    error = info.value.response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request",
        "invalid_encrypted_content",
        "input[1].encrypted_content",
    )
    assert items[0]["id"] in error["message"]


def test_a_blob_moved_to_another_item_is_refused(server):
    client = client_for(server)
    first, other = carried(turn_one(client)), carried(turn_one(client))
    first[0]["encrypted_content"] = other[0]["encrypted_content"]
    with pytest.raises(openai.BadRequestError) as info:
        turn_two(client, first)
    assert (info.value.code, info.value.param) == ("invalid_encrypted_content", "input[0].encrypted_content")


def test_a_blob_sealed_with_another_key_is_refused(server):
    other = create_app(RecordingProvider(), store=MemoryStore(), api_keys=API_KEY, reasoning_key="another key")
    with live_server(other) as other_base:
        items = carried(turn_one(client_for(other_base)))
    with pytest.raises(openai.BadRequestError) as info:
        turn_two(client_for(server), items)
    assert (info.value.code, info.value.param) == ("invalid_encrypted_content", "input[0].encrypted_content")


def test_a_blob_that_is_no_seal_at_all_is_refused(server):
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB-someone-elses-blob"}
    with pytest.raises(openai.BadRequestError) as info:
        turn_two(client_for(server), [item])
    assert (info.value.code, info.value.param) == ("invalid_encrypted_content", "input[0].encrypted_content")


def test_a_gateway_gets_its_upstreams_opaque_state_back():
    """A provider's own state (an upstream's thinking signature) rides sealed, never shown to the client."""
    steps = [ReasoningSummary("Thinking.", encrypted_content="upstream-signature-123"), TextDelta("Hi")]
    provider = RecordingProvider(StepsProvider(steps))
    with live_server(create_app(provider, store=MemoryStore(), api_keys=API_KEY)) as base:
        client = client_for(base)
        first = turn_one(client)
        assert "upstream-signature-123" not in first.output[0].encrypted_content
        turn_two(client, carried(first))
    assert provider.requests[-1].input[0] == {
        "type": "reasoning",
        "id": first.output[0].id,
        "summary": [{"type": "summary_text", "text": "Thinking."}],
        "encrypted_content": "upstream-signature-123",
    }


def test_stored_reasoning_reaches_the_provider_unsealed_through_previous_response_id(server, provider):
    client = client_for(server)
    first = client.responses.create(model="demo", input="Say hello", reasoning=REASONING, include=INCLUDE)
    client.responses.create(model="demo", input="And again", previous_response_id=first.id)
    handed = provider.requests[-1].input[1]
    assert handed == {
        "type": "reasoning",
        "id": first.output[0].id,
        "summary": [first.output[0].summary[0].model_dump()],
    }


def test_a_stored_item_sealed_under_a_former_key_goes_on_as_stored(caplog):
    """A restart without a set key changes the key; the server's own store must not turn into 400s."""
    store = MemoryStore()
    before = create_app(RecordingProvider(), store=store, api_keys=API_KEY, reasoning_key="before the restart")
    provider = RecordingProvider()
    after = create_app(provider, store=store, api_keys=API_KEY, reasoning_key="after the restart")
    with live_server(before) as base:
        first = client_for(base).responses.create(model="demo", input="Hi", reasoning=REASONING, include=INCLUDE)
    with live_server(after) as base:
        second = client_for(base).responses.create(model="demo", input="Again", previous_response_id=first.id)
    assert second.status == "completed"
    stored = first.output[0].model_dump(exclude_none=True)
    del stored["encrypted_content"]
    assert provider.requests[-1].input[1] == stored
    assert f"stored reasoning item {first.output[0].id} no longer opens" in caplog.text


def test_the_key_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ORSPEC_REASONING_KEY", "shared by every server")
    blob = Sealer().seal("rs_1", {"summary": []})
    assert Sealer("shared by every server").unseal("rs_1", blob) == {"summary": []}
    monkeypatch.delenv("ORSPEC_REASONING_KEY")
    with pytest.raises(BrokenSeal):
        Sealer().unseal("rs_1", blob)  # the process's random key


def test_sealer_binds_a_blob_to_its_item():
    sealer = Sealer("k")
    blob = sealer.seal("rs_1", {"signature": "abc"})
    assert sealer.unseal("rs_1", blob) == {"signature": "abc"}
    with pytest.raises(BrokenSeal, match="sealed for another item"):
        sealer.unseal("rs_2", blob)
    assert sealer.unseal(None, blob) == {"signature": "abc"}  # an item sent back without its id
    with pytest.raises(ValueError, match="reasoning key is empty"):
        Sealer(b"")


@pytest.mark.process
def test_orspec_serve_reasoning_key_outlives_a_restart():
    port = free_port()
    command = [sys.executable, "-m", "orspec", "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    command += ["--reasoning-key", "kept across restarts", "--delay", "0"]
    with served_process(command, port=port) as base:
        items = carried(turn_one(client_for(base)))
    with served_process(command, port=port) as base:
        assert turn_two(client_for(base), items).status == "completed"
