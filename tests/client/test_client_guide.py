"""docs/guides/client.md: its ```python blocks, run in order in one interpreter against `orspec serve`.

The `sh` block's command is what the test runs too (on a free port instead of 8000).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..conftest import ROOT
from ..server_helpers import free_port, served_process

pytestmark = pytest.mark.process

GUIDE = ROOT / "docs" / "guides" / "client.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", GUIDE.read_text(), flags=re.S | re.M)


def test_guide_examples_run_against_orspec_serve(tmp_path):
    (serve,) = blocks("sh")
    assert serve.startswith("orspec serve ")
    port = free_port()
    command = [sys.executable, "-m", "orspec", *serve.split()[1:]]
    command[command.index("8000")] = str(port)
    script = "\n\n".join(blocks("python"))
    assert len(blocks("python")) >= 8 and "responses.run(" in script and "run_stream(" in script
    with served_process(command, port=port) as base:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENRESPONSES_")}
        env |= {"OPENRESPONSES_BASE_URL": base, "OPENRESPONSES_API_KEY": "sk-demo"}
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "400 invalid_value input" in done.stdout
    assert "404 response_not_found response_id" in done.stdout
    assert "Error: TimeoutError: the weather service did not answer" in done.stdout
    assert "get_weather" in done.stdout and "get_time" in done.stdout
