"""The command line in ordinary use and misuse: output into a closed pipe, a gateway started unconfigured,
mistakes in what a command is given (one line naming the problem and the fix, exit 2, no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from orspec.scaffold import scaffold

from .conftest import RELEASES, ROOT, SHARED, run_orspec

STREAM = SHARED / "recordings" / "streams" / "openai_responses_compact_stateful_mode_stream.0.sse"

COMMANDS = {
    "validate": ["validate"],
    "check-stream": ["check-stream", str(STREAM)],
    "compliance --list": ["compliance", "--list"],
    "compliance --list --json": ["compliance", "--list", "--json"],
    "extensions list": ["extensions", "list"],
    "diff": ["diff", str(RELEASES["2026-01-15"]), str(RELEASES["2026-04-24"])],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_output_into_a_closed_pipe_ends_quietly(name, shared):
    """`orspec ... | head` where the reader is gone before the first byte: no traceback, no error line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "orspec", *COMMANDS[name]],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # the reader went away
    stderr = proc.stderr.read()
    proc.wait(timeout=300)
    assert proc.returncode == 141  # as if killed by SIGPIPE
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "internal error" not in stderr
    assert [line for line in stderr.splitlines() if ": warning: " not in line] == []


def test_gateway_without_its_base_url_exits_with_one_clear_line(tmp_path):
    out = tmp_path / "gw"
    scaffold("gw", out, template="chat-completions")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAT_COMPLETIONS_")}
    env |= {"PYTHONPATH": str(out / "src"), "ORSPEC_API_KEY": "sk-local"}
    done = subprocess.run(
        [sys.executable, "-m", "gw", "--port", "1"], cwd=out, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "gw: set CHAT_COMPLETIONS_BASE_URL (or pass base_url=): the upstream API root, e.g. https://api.openai.com/v1"
    ]
    # The README's run command sets it.
    readme = (out / "README.md").read_text()
    assert "CHAT_COMPLETIONS_BASE_URL=https://api.openai.com/v1" in readme.split("## The two commands")[1]


SPEC_FIX = "pass a spec directory or an OpenAPI file to --spec"


@pytest.mark.parametrize(
    "command",
    [
        ["validate"],
        ["build", "--check"],
        ["extensions", "list"],
        ["release", "2026-05-01"],
    ],
    ids=lambda command: command[0],
)
def test_every_spec_option_refuses_a_missing_spec_in_one_line(tmp_path, command):
    missing = tmp_path / "nonexistent"
    done = run_orspec(*command, "--spec", str(missing), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"orspec: no spec at {missing}: no such file or directory; {SPEC_FIX}"]
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_orspec(*command, "--spec", str(empty), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"orspec: no spec at {empty}: the directory holds no openapi.yaml, openapi.yml or openapi.json; {SPEC_FIX}"
    ]
    assert list(tmp_path.iterdir()) == [empty] and list(empty.iterdir()) == []  # nothing written


def test_diff_refuses_a_missing_spec_in_one_line(tmp_path):
    missing = tmp_path / "old"
    done = run_orspec("diff", str(missing), "spec/")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"orspec: no spec at {missing}: no such file or directory; "
        "pass a spec directory, an OpenAPI file or the date of a release"
    ]
