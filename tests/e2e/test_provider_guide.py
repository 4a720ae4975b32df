"""docs/guides/provider.md: its ```sh blocks, run in order in one shell, work.

Substitutions keep the run fast and offline: `/path/to/workspace` is a temporary folder holding a link
to this checkout as `orspec/`; creating the project's venv (`python3 -m venv .venv && .venv/bin/pip
install ...`) becomes `export PYTHONPATH=$PWD/src`, so `.venv/bin/` is this interpreter's environment;
port 8000 is a free port. The guide's install and test command is the one the projects' READMEs give.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, readme_commands
from ..server_helpers import free_port

pytestmark = pytest.mark.process

GUIDE = ROOT / "docs" / "guides" / "provider.md"
INSTALL = 'python3 -m venv .venv && .venv/bin/pip install -q -e ../orspec -e ../orspec/generated/python -e ".[test]"'
TEST = f"{INSTALL} && .venv/bin/python -m pytest -q"


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
def test_guide_commands_run(tmp_path):
    blocks = sh_blocks(GUIDE.read_text())
    assert len(blocks) >= 5
    script = "\n".join(blocks)
    assert script.count(TEST) == 2
    bindir = Path(sys.executable).parent
    (tmp_path / "orspec").symlink_to(ROOT)
    script = (
        script.replace("/path/to/workspace", str(tmp_path))
        .replace(". orspec/.venv/bin/activate", f'export PATH="{bindir}:$PATH"')
        .replace(INSTALL, 'export PYTHONPATH="$PWD/src"')
        .replace(".venv/bin/", f"{bindir}/")
        .replace("8000", str(free_port()))
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ORSPEC_API_KEY")}
    # The suite's own pytest plugins (hypothesis, schemathesis) are not in a provider's venv.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # Output to files and a session of its own: when a command fails, the server the guide started in
    # the background (and stops with `kill $!` only on success) neither holds a pipe open nor outlives the test.
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        shell = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            returncode = shell.wait(timeout=180)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGKILL)
    stdout, stderr = out.read_text(), err.read_text()
    assert returncode == 0, stdout[-3000:] + stderr[-3000:]
    assert stdout.count(" passed") == 2 and "FAIL" not in stdout
    assert "PASS ws-evict-after-failure" in stdout
    assert (tmp_path / "zeta-llm/src/zeta_llm/provider.py").is_file()
    assert (tmp_path / "zeta-gateway/tests/fake_upstream.py").is_file()
    for project in ("zeta-llm", "zeta-gateway"):
        assert readme_commands(tmp_path / project)[1] == TEST, project
