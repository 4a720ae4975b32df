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

EXAMPLE = ROOT / "examples" / "typescript-provider"

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


@pytest.mark.process
@pytest.mark.slow
def test_the_example_provider_installs_as_its_readme_says(tmp_path):
    """`npm install` in the example (its `file:` dependency on the checkout's package), then its README's
    `npx openresponses-check-stream -` on a stream: the package is copied in, with zod."""
    need("npm", shutil.which("npm") is not None and shutil.which("node") is not None)
    example = tmp_path / "examples" / "typescript-provider"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("node_modules", "package-lock.json"))
    (tmp_path / "generated").symlink_to(ROOT / "generated", target_is_directory=True)
    readme = (EXAMPLE / "README.md").read_text()
    assert "\nnpm install " in readme
    done = subprocess.run(["npm", "install"], cwd=example, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (example / "node_modules" / "openresponses-runtime").is_symlink()
    assert "| npx openresponses-check-stream -" in readme
    event = '{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress"}}'
    checked = subprocess.run(
        ["npx", "openresponses-check-stream", "-"],
        cwd=example,
        input=f"data: {event}\n\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 1, checked.stderr  # the checker ran: one event is not a stream
    assert "[one-terminal]" in checked.stdout and "ERR_MODULE_NOT_FOUND" not in checked.stderr
