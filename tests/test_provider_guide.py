"""docs/guides/provider.md: its ```sh blocks, run in order in one shell, work.

Substitutions keep the run fast and offline: `/path/to/workspace` is a temporary folder holding a link
to this checkout as `orspec/`; creating the project's venv (`python3 -m venv .venv && .venv/bin/pip
install ...`) becomes `export PYTHONPATH=$PWD/src`, so `.venv/bin/` is this interpreter's environment;
port 8000 is a free port. The guide's install and test command is the one the projects' READMEs give.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import readme_commands
from .server_helpers import free_port

ROOT = Path(__file__).resolve().parents[1]
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
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count(" passed") == 2 and "FAIL" not in done.stdout
    assert "PASS ws-evict-after-failure" in done.stdout
    assert (tmp_path / "zeta-llm/src/zeta_llm/provider.py").is_file()
    assert (tmp_path / "zeta-gateway/tests/fake_upstream.py").is_file()
    for project in ("zeta-llm", "zeta-gateway"):
        assert readme_commands(tmp_path / project)[1] == TEST, project
