"""OpenAI's Codex CLI (npm `@openai/codex`), unchanged, against each server of the matrix
(`client_servers.py`): a text turn, a tool turn whose arguments Codex accepts and runs in its read-only
sandbox, and `exec resume --last`, over HTTP and over WebSocket. Each run has its own CODEX_HOME and working folder.

Codex comes from `.cache/clients`, where `.ci/services` installs it (see `conftest.npm_client`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .. import client_servers
from ..conftest import npm_client
from ..server_helpers import API_KEY

pytestmark = [pytest.mark.clients, pytest.mark.process]

served = client_servers.served  # a fixture: every test runs against each server of the matrix

CODEX = ".bin/codex"


@pytest.fixture(scope="module", autouse=True)
def codex_version():
    done = subprocess.run([str(npm_client(CODEX)), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


class Codex:
    """`codex exec --json` in a throwaway CODEX_HOME pointed at `base_url`."""

    def __init__(self, home: Path, work: Path, base_url: str, *, websockets: bool):
        self.home, self.work = home, work
        home.mkdir()
        work.mkdir()
        (home / "config.toml").write_text(
            'model = "demo"\nmodel_provider = "local"\n'
            "[model_providers.local]\n"
            f'name = "local"\nbase_url = "{base_url}"\nwire_api = "responses"\nenv_key = "ORSPEC_CODEX_KEY"\n'
            f"supports_websockets = {str(websockets).lower()}\n"
        )

    def exec(self, *args: str, fails: bool = False) -> list[dict]:
        env = {**os.environ, "CODEX_HOME": str(self.home), "ORSPEC_CODEX_KEY": API_KEY, "NO_COLOR": "1"}
        command = [str(npm_client(CODEX)), "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", *args]
        done = subprocess.run(
            command, cwd=self.work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
        )
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        failures = [e for e in events if e.get("type") in ("error", "turn.failed")]
        if fails:
            assert done.returncode != 0 and failures, events
        else:
            assert done.returncode == 0 and not failures, f"exit {done.returncode}: {failures or done.stderr[-2000:]}"
        return events


def _completed(events: list[dict], kind: str) -> list[dict]:
    return [e["item"] for e in events if e.get("type") == "item.completed" and e["item"].get("type") == kind]


@pytest.mark.slow
@pytest.mark.parametrize("websockets", [False, True], ids=["http", "websocket"])
def test_codex_text_tool_and_resume_turns(served, tmp_path, websockets):
    codex = Codex(tmp_path / "home", tmp_path / "work", served, websockets=websockets)

    text = codex.exec("Say hello")
    (answer,) = _completed(text, "agent_message")
    assert answer["text"].startswith("You said:") and "Say hello" in answer["text"]
    assert any(e.get("type") == "turn.completed" for e in text)

    # "Runs" is a word of exec_command's description and of no other Codex tool's: the demo model calls
    # it with arguments Codex accepts, Codex runs the command, sends its output back, and the model
    # reports it.
    tool = codex.exec("Runs it")
    (ran,) = _completed(tool, "command_execution")
    assert ran["command"] and ran["status"] in ("completed", "failed")  # `example cmd` is no program
    (reported,) = _completed(tool, "agent_message")
    assert reported["text"].startswith("The function returned:")

    resumed = codex.exec("resume", "--last", "Say goodbye")
    (again,) = _completed(resumed, "agent_message")
    assert "Say goodbye" in again["text"]


@pytest.mark.slow
def test_codex_websocket_mode_really_speaks_websocket(tmp_path):
    # A strict server refuses the `stream: true` that Codex sends only in a WebSocket response.create: its
    # refusal shows that the websocket cases above ran over the socket, not over an HTTP fallback.
    with client_servers.orspec_serve("--strict") as strict:
        codex = Codex(tmp_path / "home", tmp_path / "work", strict, websockets=True)
        events = codex.exec("Say hello", fails=True)
    (failed,) = [e for e in events if e.get("type") == "turn.failed"]
    assert json.loads(failed["error"]["message"])["error"]["param"] == "stream"
