"""The server's parts as `create_app` composes them: every handler the build is told of (`HANDLERS`)
is one the app serves, and a store of only `get`, `put` and `delete` is completed, not wrapped
when it already has every method."""

from __future__ import annotations

import asyncio

from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from openresponses_runtime.server.app import HANDLERS
from openresponses_runtime.server.routes import ROUTES
from openresponses_runtime.server.store import complete

from ..server_helpers import API_KEY


def test_the_handlers_the_build_reads_are_the_ones_the_app_serves():
    server = create_app(DemoProvider(delay=0), store=MemoryStore(), api_keys=API_KEY).state.openresponses
    assert sorted(server.handlers()) == sorted(HANDLERS.values())
    assert {route.handler for route in ROUTES} <= set(HANDLERS.values())


def test_complete_keeps_a_whole_store_and_fills_in_a_partial_one():
    whole = MemoryStore()
    assert complete(whole) is whole

    class Partial:
        async def get(self, response_id):
            return None

        async def put(self, record):
            pass

        async def delete(self, response_id):
            return False

    partial = Partial()
    completed = complete(partial)
    assert completed is not partial and completed.get == partial.get  # its own methods, as they are
    assert completed.pool_stats() == {}
    assert asyncio.run(completed.chain("resp_1")) == []  # walked by its `get`: nothing stored
    asyncio.run(completed.open())
    asyncio.run(completed.aclose())
