"""The samples on the operation pages of every version of the reference run as published: each is
read from the generated Markdown and run against `orspec serve` (curl and both Python clients always;
the generated TypeScript client and openai-node when the client matrix in .cache/clients has openai
and zod). A streamed curl answer also passes `orspec check-stream`. A sample on a stored response
reads its id from `$RESPONSE_ID`: the test stores one first (in background mode, on a slow server,
for a cancel)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from ..client_servers import orspec_serve
from ..conftest import ROOT, npm_client, run_orspec
from ..server_helpers import API_KEY

pytestmark = pytest.mark.process

DOCS = ROOT / "generated" / "docs"
PAGES = sorted(p for p in DOCS.rglob("http-*.md") if "checker" not in p.parts)
TAB = re.compile(r'^=== "([^"]+)"\n\n    (`{3,})(\w+)\n(.*?)\n    \2\n', re.M | re.S)
OPERATION = re.compile(r"^### (GET|POST|PUT|PATCH|DELETE) (\S+)", re.M)


def published_samples(page: Path) -> list[tuple[str, str]]:
    """(label, code) of every sample tab on `page`, in order."""
    return [(label, textwrap.dedent(body)) for label, _, _, body in TAB.findall(page.read_text())]


NODE = ("openai-node", "TypeScript")
SAMPLES = [(page, i, label, code) for page in PAGES for i, (label, code) in enumerate(published_samples(page))]


def test_every_operation_of_every_version_has_all_five_samples():
    for page in PAGES:
        text = page.read_text()
        operations = OPERATION.split(text)[1:]
        assert operations, page
        for method, path, section in zip(operations[::3], operations[1::3], operations[2::3], strict=True):
            labels = [label for label, _, _, _ in TAB.findall(section)]
            assert labels.count("curl") >= 1, (page, method, path)
            for kind in ("Python", "openai (Python)", "TypeScript", "openai-node"):
                assert labels.count(kind) == labels.count("curl"), (page, method, path, kind)
            assert "Example response (" in section, (page, method, path)
    versions = {p.parent.name if p.parent != DOCS else "draft" for p in PAGES}
    assert versions == {"draft", "2026-01-15", "2026-04-24"}


@pytest.fixture(scope="module")
def servers():
    """A quick server, and a slow one on which a background response is still running when cancelled."""
    with orspec_serve("--delay", "0") as quick, orspec_serve("--delay", "3") as slow:
        yield quick, slow


def _stored(base: str, background: bool) -> str:
    body = {"model": "demo", "input": "Write a haiku about the sea.", "background": background, "store": True}
    answer = httpx.post(f"{base}/responses", json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


@pytest.fixture
def server(servers, request):
    """The environment a sample runs in: the server, the key, and `$RESPONSE_ID` when it needs one."""
    code = request.node.callspec.params["code"]
    cancels = "cancel" in code
    base = servers[1] if cancels else servers[0]
    env = {**os.environ, "OPENRESPONSES_BASE_URL": base, "OPENRESPONSES_API_KEY": API_KEY}
    if "RESPONSE_ID" in code:
        env["RESPONSE_ID"] = _stored(base, background=cancels)
    return env


def _run(command: list[str], env: dict, cwd: Path) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{command}: {done.stderr}\n{done.stdout}"
    return done.stdout


@pytest.mark.parametrize(("page", "index", "label", "code"), [s for s in SAMPLES if s[2] not in NODE])
def test_sample_runs_against_orspec_serve(server, tmp_path, page, index, label, code):
    if label == "curl":
        if shutil.which("curl") is None:
            pytest.skip("curl is not on PATH")
        out = _run(["bash", "-euo", "pipefail", "-c", code], server, tmp_path)
        if "data: [DONE]" in out:
            capture = tmp_path / "stream.sse"
            capture.write_text(out)
            checked = run_orspec("check-stream", str(capture))
            assert checked.returncode == 0, checked.stdout + checked.stderr
        else:
            assert json.loads(out)["object"] in (
                "response",
                "response.compaction",
                "response.deleted",
                "list",
                "response.input_tokens",
            ), out
        return
    script = tmp_path / "sample.py"
    script.write_text(code)
    out = _run([sys.executable, str(script)], server, tmp_path)
    assert _answered(out, server), out


def _answered(out: str, env: dict) -> bool:
    """What a sample prints: a stream's events or status, an answer's JSON, or the id it deleted."""
    if env.get("RESPONSE_ID") and ("cancelled" in out or env["RESPONSE_ID"] in out):
        return True
    return "completed" in out or '"object"' in out or '"type"' in out


@pytest.mark.parametrize(("page", "index", "label", "code"), [s for s in SAMPLES if s[2] in NODE])
def test_node_sample_runs_against_orspec_serve(server, tmp_path, page, index, label, code):
    modules = tmp_path / "node_modules"
    if label == "openai-node":
        modules.symlink_to(npm_client(""))
    else:  # the generated package as a user installs it, with its one dependency from the client matrix
        modules.mkdir()
        shutil.copytree(ROOT / "generated" / "typescript", modules / "openresponses-runtime")
        (modules / "zod").symlink_to(npm_client("zod"), target_is_directory=True)
    node = shutil.which("node")
    assert node, "node is not on PATH (.ci/services installs it)"
    (tmp_path / "sample.mjs").write_text(code)
    out = _run([node, "sample.mjs"], server, tmp_path)
    assert _answered(out, server), out
