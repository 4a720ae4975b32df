"""The command line in ordinary use and misuse: output into a closed pipe, a gateway started unconfigured,
mistakes in what a command is given (one line naming the problem and the fix, exit 2, no traceback)."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys

import pytest
from orspec.scaffold import scaffold

from .. import cpu_time
from ..conftest import RELEASES, ROOT, SHARED, run_orspec
from ..server_helpers import stop

STREAM = SHARED / "recordings" / "streams" / "openai_responses_compact_stateful_mode_stream.0.sse"

COMMANDS = {
    "validate": ["validate"],
    "check-stream": ["check-stream", str(STREAM)],
    "compliance --list": ["compliance", "--list"],
    "compliance --list --json": ["compliance", "--list", "--json"],
    "extensions list": ["extensions", "list"],
    "diff": ["diff", str(RELEASES["2026-01-15"]), str(RELEASES["2026-04-24"])],
}


@pytest.mark.process
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


@pytest.mark.process
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


# -- serve and proxy: the port and the store ------------------------------------------------------

LISTENERS = {
    "serve": ["serve", "--api-key", "sk-test", "--store", "memory:"],
    "proxy": ["proxy", "--upstream", "http://127.0.0.1:9/v1"],
}


@pytest.fixture
def busy_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


@pytest.mark.parametrize("command", sorted(LISTENERS))
def test_a_busy_port_is_one_line_naming_it_and_the_fix(tmp_path, busy_port, command):
    """Nothing said to be served, no proxy summary, no record file: one line and exit 2 for both."""
    record = ["--record", str(tmp_path / "rec")] if command == "proxy" else []
    done = run_orspec(*LISTENERS[command], *record, "--port", str(busy_port), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"orspec: port {busy_port} on 127.0.0.1 is in use; pick another with --port"]
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no record folder, no SQLite file


def test_docs_serve_says_its_port_is_busy_before_building(tmp_path, busy_port):
    done = run_orspec("docs", "serve", "--dev-addr", f"127.0.0.1:{busy_port}")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"orspec: port {busy_port} on 127.0.0.1 is in use; pick another with --dev-addr"
    ]
    done = run_orspec("docs", "serve", "--dev-addr", str(busy_port))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"orspec: --dev-addr {busy_port} is not HOST:PORT; pass e.g. 127.0.0.1:8000"]


@pytest.mark.parametrize("command", sorted(LISTENERS))
@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (["--port", "70000"], "--port 70000 is not a port number; pick one from 1 to 65535"),
        (
            ["--host", "no-such-host.invalid"],
            "cannot listen on no-such-host.invalid: no such host; pass an address with --host, e.g. 127.0.0.1",
        ),
    ],
    ids=["port out of range", "unknown host"],
)
def test_a_port_that_cannot_be_had_is_one_line(tmp_path, command, where, expected):
    done = run_orspec(*LISTENERS[command], *where, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"orspec: {expected}"]


@pytest.mark.process
@pytest.mark.parametrize("command", sorted(LISTENERS))
def test_the_serving_line_comes_once_the_port_is_taken(tmp_path, command):
    """Port 0 takes a free port; the line names it, and a client may connect the moment it is printed."""
    env = {k: v for k, v in os.environ.items() if k not in ("ORSPEC_API_KEY", "ORSPEC_STORE")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "orspec", *LISTENERS[command], "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own, which `stop` ends whole if it hangs
    )
    try:
        assert select.select([proc.stderr], [], [], cpu_time.scaled(60))[0], "no serving line within 60 s"
        line = proc.stderr.readline()  # written whole, with its newline, in one flush
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/v1/responses", line)[1])
        assert port != 0, line
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:  # at once: no retry
            client.sendall(b"GET /v1/responses HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            assert client.recv(9) == b"HTTP/1.1 "  # an answer, so the server runs; Ctrl-C now stops it
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=cpu_time.scaled(30))
        finally:
            stop(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.process
def test_a_store_that_cannot_be_opened_is_a_configuration_mistake(tmp_path):
    """Named (without its password) with what to check, one line, exit 2: not an internal error."""
    pytest.importorskip("psycopg")
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"postgresql://orspec:hunter2@127.0.0.1:{port}/responses"
    done = run_orspec("serve", "--api-key", "sk-test", "--store", url, "--port", "0", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"orspec: cannot open the response store postgresql://orspec:***@127.0.0.1:{port}/responses ("
    )
    assert line.endswith(
        "); check that PostgreSQL runs there and that the URL's host, port, database, user and password are right,"
        " or pass another with --store"
    )
    assert "hunter2" not in done.stderr + done.stdout and done.stdout == ""


@pytest.mark.process
@pytest.mark.parametrize("kind", ["a folder", "not SQLite"])
def test_a_sqlite_store_that_cannot_be_opened_is_a_configuration_mistake(tmp_path, kind):
    store = tmp_path / "store"
    if kind == "a folder":
        store.mkdir()
    else:
        store.write_text("these are notes, not a database\n" * 10)
    done = run_orspec(
        "serve", "--api-key", "sk-test", "--store", str(store), "--port", "0", cwd=tmp_path, env={"ORSPEC_STORE": ""}
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"orspec: cannot open the response store {store} (")
    assert line.endswith("); check that it names a SQLite file in a folder you may write, or pass another with --store")


@pytest.mark.process
def test_a_scaffolded_provider_says_the_same_of_its_store(tmp_path):
    out = tmp_path / "prov"
    scaffold("prov", out)
    env = {**os.environ, "PYTHONPATH": str(out / "src"), "ORSPEC_API_KEY": "sk-local"}
    done = subprocess.run(
        [sys.executable, "-m", "prov", "--port", "0", "--store", str(tmp_path)],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"prov: cannot open the response store {tmp_path} (")


def test_compliance_against_no_server_is_one_line_not_a_failure_per_test():
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    done = run_orspec("compliance", "--base-url", url, "--api-key", "sk-test")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"orspec: no server answered at {url}; start it, or wait for it with --wait SECONDS"
    ]
    assert done.stdout == ""
    done = run_orspec("compliance", "--base-url", "localhost:8000", "--api-key", "sk-test")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "orspec: --base-url must be an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1, not 'localhost:8000'"
    ]
