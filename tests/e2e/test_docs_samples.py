"""The samples on the operation pages of the reference run as published: each is read from the
generated Markdown and run against `orspec serve` (curl and both Python clients always; the generated
TypeScript client and openai-node when the client matrix in .cache/clients has openai and zod). A streamed curl answer also passes `orspec check-stream`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..client_servers import orspec_serve
from ..conftest import ROOT, npm_client, run_orspec
from ..server_helpers import API_KEY

pytestmark = pytest.mark.process

# The draft's: the releases froze no examples, so their pages have no samples.
PAGES = [ROOT / "generated" / "docs" / "http-api.md"]
TAB = re.compile(r'^=== "([^"]+)"\n\n    (`{3,})(\w+)\n(.*?)\n    \2\n', re.M | re.S)


def published_samples(page: Path) -> list[tuple[str, str]]:
    """(label, code) of every sample tab on `page`, in order."""
    return [(label, textwrap.dedent(body)) for label, _, _, body in TAB.findall(page.read_text())]


NODE = ("openai-node", "TypeScript")
SAMPLES = [(page, i, label, code) for page in PAGES for i, (label, code) in enumerate(published_samples(page))]


def test_every_operation_with_an_example_has_all_four_samples():
    labels = [label for page, _, label, _ in SAMPLES if page == PAGES[0]]
    assert labels.count("curl") >= 3  # two examples of createResponse, one of compactResponse
    for kind in ("Python", "openai (Python)", "openai-node"):
        assert labels.count(kind) == labels.count("curl"), kind
    assert labels.count("TypeScript") == 2  # createResponse's examples; the generated client has no compact


@pytest.fixture(scope="module")
def server():
    with orspec_serve("--delay", "0") as base:
        yield {**os.environ, "OPENRESPONSES_BASE_URL": base, "OPENRESPONSES_API_KEY": API_KEY}


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
            assert json.loads(out)["object"] in ("response", "response.compaction"), out
        return
    script = tmp_path / "sample.py"
    script.write_text(code)
    out = _run([sys.executable, str(script)], server, tmp_path)
    assert "completed" in out or '"object"' in out, out


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
    assert "response.completed" in out or '"object"' in out, out
