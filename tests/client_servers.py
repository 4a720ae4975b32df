"""The servers the client matrix drives every client against (tests/e2e/test_clients_*.py): a stock
`orspec serve`, a demo provider scaffolded as a user would, and `orspec proxy` in front of `orspec serve`,
whose records must hold no violation and no request problem for anything the clients sent."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .conftest import run_orspec
from .server_helpers import API_KEY, free_port, served_process

SERVERS = ["orspec-serve", "scaffolded", "proxied"]
ORSPEC = [sys.executable, "-m", "orspec"]


@contextmanager
def orspec_serve(*options: str) -> Iterator[str]:
    port = free_port()
    command = [*ORSPEC, "serve", "--port", str(port), "--api-key", API_KEY, "--store", "memory:", *options]
    with served_process(command, port=port) as base:
        yield base


@contextmanager
def scaffolded(folder: Path) -> Iterator[str]:
    done = run_orspec("scaffold", "provider", "matrix-demo", "--out", str(folder / "project"), "--template", "demo")
    assert done.returncode == 0, done.stderr
    port = free_port()
    command = [sys.executable, "-m", "matrix_demo", "--port", str(port), "--api-key", API_KEY, "--store", "memory:"]
    with served_process(command, port=port, env={"PYTHONPATH": str(folder / "project" / "src")}) as base:
        yield base


@contextmanager
def proxied(folder: Path) -> Iterator[str]:
    records = folder / "records"
    with orspec_serve() as upstream:
        port = free_port()
        command = [*ORSPEC, "proxy", "--upstream", upstream, "--port", str(port), "--record", str(records)]
        with served_process(command, port=port) as base:
            yield base
    exchanges = [json.loads(line) for path in records.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert exchanges, "the proxy recorded nothing"
    flawed = [e for e in exchanges if e["violations"] or e["request_problems"]]
    assert not flawed, flawed


@pytest.fixture(scope="module", params=SERVERS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (`.../v1`) of each server of the matrix in turn."""
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "orspec-serve":
        server = orspec_serve()
    elif request.param == "scaffolded":
        server = scaffolded(folder)
    else:
        server = proxied(folder)
    with server as base:
        yield base
