"""The gateways' spine (`openresponses_runtime.gateways.base`) and their registry: every registered
gateway maps an upstream's error statuses the same way (with its own additions, each tested), mints
compaction ids like the rest of the runtime, renames models by its map, and is what the scaffold
and the docs offer."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from openresponses_runtime.gateways import GATEWAYS
from openresponses_runtime.gateways.base import GatewayProvider, expand_compactions
from openresponses_runtime.server import create_app

from ..server_helpers import API_KEY, live_server
from ..upstream_replay import UPSTREAM_KEY, upstream

ROOT = Path(__file__).resolve().parents[2]
HEADERS = {"Authorization": f"Bearer {API_KEY}"}

# upstream status -> (our status, error code, Retry-After passed on); the same for every gateway
COMMON = {
    400: (400, "upstream_invalid_request", False),
    413: (400, "upstream_invalid_request", False),
    422: (400, "upstream_invalid_request", False),
    401: (500, "upstream_unauthorized", False),
    403: (500, "upstream_unauthorized", False),
    404: (502, "model_error", False),
    429: (429, "rate_limit_exceeded", True),
    500: (502, "model_error", False),
    503: (503, "upstream_overloaded", True),
}
# what a gateway maps otherwise, by its upstream's own statuses
OWN = {
    "anthropic-messages": {529: (503, "upstream_overloaded", True)},
    "gemini": {404: (404, "model_not_found", False)},
}
CASES = [
    (name, status, expected)
    for name in GATEWAYS
    for status, expected in {**COMMON, **OWN.get(name, {})}.items()
]  # fmt: skip


@pytest.fixture(scope="module")
def replay():
    with upstream() as (url, replay):
        yield url.removesuffix("/v1"), replay


@contextmanager
def served(name: str, root: str, **options) -> Iterator[str]:
    gateway = GATEWAYS[name]
    provider = gateway.load()(base_url=root + gateway.api_root, api_key=UPSTREAM_KEY, **options)
    with live_server(create_app(provider, store="memory:", api_keys=API_KEY)) as base:
        yield base


@pytest.mark.parametrize(("name", "status", "expected"), CASES, ids=[f"{n}-{s}" for n, s, _ in CASES])
def test_upstream_error_statuses_map_alike(replay, name, status, expected):
    root, upstream_ = replay
    body = {"error": {"type": "some_error", "message": f"upstream says {status}"}}
    upstream_.answer(
        json.dumps(body).encode(), status=status, content_type="application/json", headers={"retry-after": "7"}
    )
    with served(name, root) as base:
        reply = httpx.post(base + "/responses", json={"model": "m", "input": "hi"}, headers=HEADERS, timeout=30)
    our_status, code, retry = expected
    error = reply.json()["error"]
    assert (reply.status_code, error["code"]) == (our_status, code), error
    assert set(error) == {"type", "code", "param", "message"}
    if code == "upstream_unauthorized":
        assert "upstream says" not in error["message"]  # the upstream's words about our key stay here
    else:
        assert f"upstream says {status}" in error["message"]
    assert (reply.headers.get("retry-after") == "7") is retry


def test_compaction_ids_are_the_runtimes_ids(replay):
    root, _ = replay
    for gateway in GATEWAYS.values():
        provider = gateway.load()(base_url=root, api_key=UPSTREAM_KEY)
        items = [{"type": "message", "role": "user", "content": "hi"}]
        first, second = (asyncio.run(provider.compact(items, model="m", instructions=None))[0] for _ in range(2))
        assert re.fullmatch(r"cmp_[0-9a-f]{32}", first["id"]) and first["id"] != second["id"]
        assert expand_compactions([first]) == items


def test_models_pass_through_or_are_renamed(replay):
    root, upstream_ = replay
    for name, gateway in GATEWAYS.items():
        provider = gateway.load()(base_url=root, api_key=UPSTREAM_KEY, models={"fast": "upstream-fast-1"})
        assert provider.upstream_model("fast") == "upstream-fast-1"
        assert provider.upstream_model("other") == "other", name
        pinned = gateway.load()(base_url=root, api_key=UPSTREAM_KEY, model="pinned", models={"fast": "x"})
        assert pinned.upstream_model("fast") == "pinned"


def test_every_gateway_is_a_gateway_provider_with_its_registered_key():
    assert set(GATEWAYS) >= {"chat-completions", "anthropic-messages"}
    for name, gateway in GATEWAYS.items():
        assert issubclass(gateway.load(), GatewayProvider), name
        assert gateway.key_variable.endswith("_API_KEY")
        assert gateway.settings and all(variable.isupper() for variable, _ in gateway.settings)


def test_the_scaffold_offers_the_registered_gateways():
    from orspec.scaffold import SCAFFOLD, TEMPLATES

    assert TEMPLATES[0] == "demo" and set(TEMPLATES[1:]) <= set(GATEWAYS)
    for template in TEMPLATES[1:]:
        assert (SCAFFOLD / template / "src" / "__package__" / "provider.py.jinja").is_file()
    for path in SCAFFOLD.rglob("*.jinja"):
        assert not re.search(r"template\s*[!=]=", path.read_text()), path  # the registry says what differs


def test_the_docs_name_every_gateway():
    readme = (ROOT / "README.md").read_text()
    guide = (ROOT / "docs" / "guides" / "provider.md").read_text()
    for name, gateway in GATEWAYS.items():
        for text in (readme, guide):
            assert f"--gateway {name}" in text, name
        assert f"${gateway.key_variable}" in guide, name
        assert f"openresponses_runtime.gateways.{gateway.module}" in guide, name
