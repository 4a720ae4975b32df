"""The scope `end_responses()` cancels, on a non-streamed create: the response ends
`server_shutting_down`, and the request's task is left as it was (no cancellation pending)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from openresponses_runtime.server import MemoryStore, MessageStart, TextDelta, create_app, shutdown

from ..server_helpers import API_KEY

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


class _Waits:
    """Starts a message, then waits on `opened` before its text."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.waiting = asyncio.Event()

    async def respond(self, request):
        yield MessageStart()
        self.waiting.set()
        await self.opened.wait()
        yield TextDelta("late")


@pytest.fixture
def ended_after(monkeypatch):
    """`end_responses()` changes the process's state: it is put back after the test."""
    monkeypatch.setattr(shutdown, "_ended", False)
    monkeypatch.setattr(shutdown, "_running", set())


def _post(client: httpx.AsyncClient) -> asyncio.Task[httpx.Response]:
    return asyncio.ensure_future(client.post("/v1/responses", json={"input": "hi"}, headers=HEADERS))


def test_end_responses_ends_a_create_waiting_on_its_provider(ended_after):
    async def go():
        provider = _Waits()
        app = create_app(provider, store=MemoryStore(), api_keys=API_KEY)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            answer = _post(client)
            await asyncio.wait_for(provider.waiting.wait(), 10)
            shutdown.end_responses()
            answer = await asyncio.wait_for(answer, 10)
            assert not shutdown._running  # the scope left the registry
            return answer

    answer = asyncio.run(go())
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "server_shutting_down"


def test_a_create_begun_after_the_deadline_that_never_waits_completes_and_leaves_its_task_uncancelled(ended_after):
    async def go():
        provider = _Waits()
        provider.opened.set()  # `Event.wait` on a set event returns without waiting
        app = create_app(provider, store=MemoryStore(), api_keys=API_KEY)
        shutdown.end_responses()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            # The app runs in this task (ASGITransport): a cancellation left pending would raise below.
            answer = await client.post("/v1/responses", json={"input": "hi"}, headers=HEADERS)
            await asyncio.sleep(0)
            assert asyncio.current_task().cancelling() == 0
            return answer

    answer = asyncio.run(go())
    assert answer.status_code == 200, answer.text  # no wait inside the scope: nothing to cancel it at
    assert answer.json()["output"][0]["content"][0]["text"] == "late"


def test_a_create_whose_scope_is_cancelled_while_it_waits_leaves_its_task_uncancelled(ended_after):
    async def go():
        provider = _Waits()
        app = create_app(provider, store=MemoryStore(), api_keys=API_KEY)

        async def served() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
                answer = await client.post("/v1/responses", json={"input": "hi"}, headers=HEADERS)
                await asyncio.sleep(0)  # a cancellation left pending in this task would raise here
                assert asyncio.current_task().cancelling() == 0
                return answer

        task = asyncio.ensure_future(served())
        await asyncio.wait_for(provider.waiting.wait(), 10)
        shutdown.end_responses()
        return await asyncio.wait_for(task, 10)

    answer = asyncio.run(go())
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "server_shutting_down"
