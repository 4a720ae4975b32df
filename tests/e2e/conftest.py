"""What the docs site's browser tests share: the site built once a module and served on loopback,
and Debian's chromium driven by playwright (never `playwright install`: the system browser is used).
Screenshots go to test-artifacts/ (gitignored)."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ..conftest import ROOT, run_orspec

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature is http.server's
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # the browser dropping a connection is not news
        pass


@pytest.fixture(scope="module")
def site_url(tmp_path_factory):
    pytest.importorskip("material", reason="mkdocs-material is not installed (the docs extra)")
    site = tmp_path_factory.mktemp("site")
    result = run_orspec("docs", "build", "--site-dir", str(site))
    assert result.returncode == 0, result.stderr
    server = _Server(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.is_file():
        pytest.skip("/usr/bin/chromium is absent (apt-get install -y chromium); the browser test needs it")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()
