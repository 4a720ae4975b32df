"""JavaScript clients, unchanged, against each server of the matrix (`client_servers.py`): the Vercel AI
SDK's OpenAI Responses model and the official `openai` npm package. Each runs a script from tests/e2e/clients/
that prints what it saw as JSON; the clients come from `.cache/clients` (see `conftest.npm_client`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .. import client_servers
from ..conftest import ROOT, npm_client
from ..server_helpers import API_KEY

pytestmark = [pytest.mark.clients, pytest.mark.process]

served = client_servers.served  # a fixture: every test runs against each server of the matrix

SCRIPTS = ROOT / "tests" / "e2e" / "clients"


def run_script(name: str, base_url: str, folder: Path) -> dict:
    # Node resolves a module's imports from the module's own folder: the script runs beside the clients.
    (folder / "node_modules").symlink_to(npm_client(""))
    shutil.copy(SCRIPTS / name, folder / name)
    node = shutil.which("node")
    assert node, "node is not on PATH (.ci/services installs it)"
    env = {**os.environ, "BASE_URL": base_url, "API_KEY": API_KEY}
    done = subprocess.run([node, name], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_vercel_ai_sdk_generate_stream_and_tool_loop(served, tmp_path):
    npm_client("@ai-sdk/openai")
    seen = run_script("ai_sdk.mjs", served, tmp_path)
    assert seen["generated"] == "You said: Hello there"
    assert seen["streamed"] == "You said: Stream this please" and seen["deltas"] > 1
    assert seen["calls"] == [["get_weather", {"city": "example city"}]]
    assert seen["looped"] == "The function returned: Sunny in example city" and seen["finish"] == "stop"


@pytest.mark.slow
def test_openai_node_create_stream_parse_tools_and_websocket(served, tmp_path):
    npm_client("openai")
    seen = run_script("openai_node.mjs", served, tmp_path)
    assert seen["created"] == "You said: Hello there"
    assert seen["streamed"] == "You said: Stream this please" and seen["deltas"] > 1
    assert seen["last"] == "response.completed"
    assert seen["parsed"] == {"city": "example city", "high": 1}
    assert seen["call"] == ["get_weather", {"city": "example city"}]
    assert seen["answered"] == "The function returned: Sunny in example city"
    assert seen["overSocket"] == "You said: Hello over a socket"
