"""The guide's install commands, run verbatim in a fresh folder: from the checkout's folder, and from a
tarball `npm pack` makes. Each must give a copy of the package with zod beside it, which imports and
parses. npm fetches zod from the registry, as it does for a user."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ..conftest import ROOT
from .test_typescript import GUIDE, need, run

CHECK = (
    'import { parseEvent, ResponseResource } from "openresponses-runtime";\n'
    'const e = parseEvent(\'{"type":"response.output_text.delta","sequence_number":1,"item_id":"i",'
    '"output_index":0,"content_index":0,"delta":"hi","logprobs":[]}\');\n'
    "console.log(e.delta, typeof ResponseResource.parse);\n"
)


def install_blocks() -> list[str]:
    """The ```sh blocks of the guide's install section, their `/path/to/orspec` this checkout."""
    section = GUIDE.read_text().split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.S | re.M)
    return [block.replace("/path/to/orspec", str(ROOT)) for block in blocks]


def test_the_guide_shows_a_folder_install_and_a_tarball_install():
    blocks = install_blocks()
    assert len(blocks) == 2
    assert "--install-links" in blocks[0] and "npm pack" in blocks[1] and ".tgz" in blocks[1]


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1], ids=["folder", "tarball"])
def test_the_guide_install_commands_work_verbatim(index, tmp_path):
    need("npm", shutil.which("npm") is not None and shutil.which("node") is not None)
    folder = tmp_path / "fresh"
    folder.mkdir()
    for line in install_blocks()[index].splitlines():
        done = subprocess.run(["bash", "-c", line], cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
    package = folder / "node_modules" / "openresponses-runtime"
    assert package.is_dir() and not package.is_symlink()
    assert (folder / "node_modules" / "zod" / "package.json").is_file()
    (folder / "check.mjs").write_text(CHECK)
    result = run(["node", "check.mjs"], folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["hi", "function"]
