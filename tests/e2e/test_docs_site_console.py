"""The versioned reference and the operation console in a real browser (Debian's chromium, playwright).

Every request to a host other than 127.0.0.1 is aborted and recorded: the site must work offline and
load nothing from a third-party host. The console is pointed at a live `orspec serve --cors-origin`
and at a small fake server that sends a corrupted stream; its marks must be the rules `orspec
check-stream` reports for the same bytes. Screenshots go to test-artifacts/. Skips as
test_docs_browser.py does when chromium or playwright is absent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import httpx
import pytest

from ..client_servers import orspec_serve
from ..conftest import run_orspec
from ..server_helpers import API_KEY
from .conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.process]

STREAM_BODY = {"model": "demo", "input": "Write a haiku about the sea.", "stream": True}


@pytest.fixture
def page(browser):
    """A tab on which every request to another host than 127.0.0.1 is aborted; `page.blocked` lists them."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    blocked: list[str] = []

    def only_loopback(route):
        if urlsplit(route.request.url).hostname == "127.0.0.1" or route.request.url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_loopback)
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    tab.blocked = blocked
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.errors = errors
    try:
        yield tab
    finally:
        context.close()


def pick(page, version: str) -> None:
    page.locator(".orspec-version-select").select_option(version)


def test_version_picker_moves_between_releases_on_one_schema(page, site_url):
    page.goto(f"{site_url}/reference/2026-04-24/items/#Message")
    assert page.locator("h2#Message").is_visible()
    pick(page, "2026-01-15")
    page.wait_for_url(f"{site_url}/reference/2026-01-15/items/#Message")
    assert page.locator("h2#Message").is_visible()
    assert page.locator(".orspec-version-select").input_value() == "2026-01-15"
    pick(page, "draft")
    page.wait_for_url(f"{site_url}/reference/items/#Message")
    assert page.locator(".admonition.warning", has_text="unreleased draft").is_visible()
    # A schema the older release does not have: that release's index.
    page.goto(f"{site_url}/reference/2026-04-24/items/#CompactionBody")
    pick(page, "2026-01-15")
    page.wait_for_url(f"{site_url}/reference/2026-01-15/")
    assert page.locator(".orspec-version-select").input_value() == "2026-01-15"
    assert page.blocked == [] and page.errors == []
    page.screenshot(path=str(ARTIFACTS / "docs-version-picker.png"), full_page=False)


def test_latest_release_is_the_default_and_each_version_has_its_openapi(page, site_url):
    versions = httpx.get(f"{site_url}/reference/versions.json", timeout=10).json()["versions"]
    assert [v["status"] for v in versions] == ["latest", "release", "draft"]
    page.goto(f"{site_url}/reference/items/")
    picker = page.locator(".orspec-version-select option")
    picker.first.wait_for(state="attached")  # the page fills the picker once versions.json has come
    options = picker.all_inner_texts()
    assert options[0] == "2026-04-24 (latest release)" and options[-1] == "draft (unreleased)"
    for folder in ("2026-04-24/", "2026-01-15/", ""):
        document = httpx.get(f"{site_url}/reference/{folder}openapi.json", timeout=10).json()
        assert document["info"]["version"] == (folder.rstrip("/") or document["info"]["version"])


def _console(page, site_url, base: str, body: dict, path: str = "reference/http-api/"):
    page.goto(f"{site_url}/{path}")
    form = page.locator(".orspec-console-form").first
    form.locator("[name=base]").fill(base)
    form.locator("[name=key]").fill(API_KEY)
    form.locator("[name=body]").fill(json.dumps(body))
    form.locator("button[type=submit]").click()
    status = page.locator(".orspec-stream-status.orspec-valid, .orspec-stream-status.orspec-invalid").first
    status.wait_for(state="visible")
    return status


def test_console_streams_from_orspec_serve_and_every_event_is_valid(page, site_url):
    with orspec_serve("--delay", "0", "--cors-origin", site_url) as base:
        page.goto(f"{site_url}/reference/http-api/")
        example = json.loads(page.locator(".orspec-console-form [name=body]").first.input_value())
        assert example["stream"] is True and example["input"]  # the spec's example, not an empty body
        status = _console(page, site_url, base, STREAM_BODY)
        events = page.locator(".orspec-event")
        streamed = events.count()
        # The same form, a JSON answer: shown as the server returned it, and no event list.
        form = page.locator(".orspec-console-form").first
        form.locator("[name=body]").fill(json.dumps({**STREAM_BODY, "stream": False}))
        form.locator("button[type=submit]").click()
        answer = page.locator(".orspec-answer").first
        answer.wait_for(state="visible")
        assert json.loads(answer.inner_text())["status"] == "completed"
        assert page.locator(".orspec-status").first.inner_text().startswith("200 ")
        assert events.count() == 0
        form.locator("[name=body]").fill(json.dumps(STREAM_BODY))
        form.locator("button[type=submit]").click()
        status = page.locator(".orspec-stream-status.orspec-valid, .orspec-stream-status.orspec-invalid").first
        status.wait_for(state="visible")
    assert events.count() == streamed
    assert events.count() > 5
    assert page.locator(".orspec-event.orspec-valid").count() == events.count()
    assert page.locator(".orspec-event.orspec-invalid").count() == 0
    assert status.inner_text().endswith("every one valid")
    assert events.last.get_attribute("data-type") == "[DONE]"
    response = json.loads(page.locator(".orspec-accumulated").inner_text())
    assert response["status"] == "completed" and response["output"][0]["content"][0]["text"]
    assert page.evaluate("sessionStorage.getItem('orspec-console-key')") == API_KEY
    stored = page.evaluate("Object.values(localStorage).join(' ')")  # the theme keeps its own settings there
    assert API_KEY not in stored  # the key never outlives the tab
    assert page.blocked == [] and page.errors == []
    page.locator(".orspec-console").first.screenshot(path=str(ARTIFACTS / "docs-console-stream.png"))


class _FakeServer(ThreadingHTTPServer):
    """Answers any POST with `payload` as an SSE stream, with CORS headers for `origin`."""

    payload = b""
    origin = ""

    def handle_error(self, request, client_address):
        pass


class _FakeHandler(BaseHTTPRequestHandler):
    def _cors(self):
        self.send_header("Access-Control-Allow-Origin", self.server.origin)
        self.send_header("Access-Control-Allow-Headers", "authorization, content-type, accept")
        self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")

    def do_OPTIONS(self):  # noqa: N802 - http.server's naming
        self.send_response(204)
        self._cors()
        self.end_headers()

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(self.server.payload)))
        self.end_headers()
        self.wfile.write(self.server.payload)

    def log_message(self, format, *args):  # noqa: A002
        pass


@pytest.fixture(scope="module")
def served_stream() -> list[bytes]:
    """The frames of a real stream from `orspec serve`, `data: [DONE]` last."""
    with orspec_serve("--delay", "0") as base:
        answer = httpx.post(
            f"{base}/responses", json=STREAM_BODY, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30
        )
    return [frame for frame in answer.content.split(b"\n\n") if frame.strip()]


def _event(frame: bytes) -> dict | None:
    data = frame.split(b"data: ", 1)[1]
    return None if data == b"[DONE]" else json.loads(data)


def _with_event(frame: bytes, event: dict) -> bytes:
    return frame.split(b"data: ", 1)[0] + b"data: " + json.dumps(event, separators=(",", ":")).encode()


def _first(frames: list[bytes], kind: str) -> int:
    return next(i for i, f in enumerate(frames) if (_event(f) or {}).get("type") == kind)


def _changed(frames: list[bytes], kind: str, change) -> list[bytes]:
    """`frames` with the first event of type `kind` changed in place by `change(event)`."""
    at = _first(frames, kind)
    event = _event(frames[at])
    change(event)
    return [*frames[:at], _with_event(frames[at], event), *frames[at + 1 :]]


def _moved(frames: list[bytes], kind: str, after: str) -> list[bytes]:
    """`frames` with the first event of type `kind` moved to just after the first of type `after`."""
    rest = [f for i, f in enumerate(frames) if i != _first(frames, kind)]
    at = _first(rest, after) + 1
    return [*rest[:at], frames[_first(frames, kind)], *rest[at:]]


# Streams broken on purpose, one a family of rules: each must be judged alike by the console and the CLI.
BROKEN = {
    "schema": lambda frames: _changed(frames, "response.output_text.delta", lambda e: e.update(delta=42)),
    "ordering": lambda frames: [f for i, f in enumerate(frames) if i != _first(frames, "response.content_part.added")],
    "in-progress": lambda frames: _moved(frames, "response.in_progress", "response.output_item.added"),
    "sequence": lambda frames: _changed(frames, "response.output_text.done", lambda e: e.update(sequence_number=1)),
    "terminal": lambda frames: [*frames[:-1], frames[_first(frames, "response.output_text.delta")], frames[-1]],
    "no-terminal": lambda frames: [f for i, f in enumerate(frames) if i != _first(frames, "response.completed")],
    "done": lambda frames: frames[:-1],
}
FINDING = re.compile(r"^seq (\d+|\?): (?:warning )?\[([a-z-]+)\] (.*)$", re.M)


def _findings_of_the_cli(tmp_path, payload: bytes) -> list[tuple[str, str, str]]:
    capture = tmp_path / "broken.sse"
    capture.write_bytes(payload)
    checked = run_orspec("check-stream", str(capture))
    assert checked.returncode == 1, checked.stdout  # each stream is broken
    return FINDING.findall(checked.stdout)


def _findings_of_the_console(page) -> list[tuple[str, str, str]]:
    rows = page.locator(".orspec-console-output li[data-rule]").evaluate_all(
        "rows => rows.map(r => [r.dataset.seq, r.dataset.rule, r.textContent.slice(r.dataset.rule.length + 1)])"
    )
    return [tuple(row) for row in rows]


@pytest.fixture
def fake_server(site_url):
    """A server that answers with `fake.payload`; yields (fake, its base URL)."""
    fake = _FakeServer(("127.0.0.1", 0), _FakeHandler)
    fake.origin = site_url
    thread = threading.Thread(target=fake.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{fake.server_address[1]}/v1"
    finally:
        fake.shutdown()
        fake.server_close()
        thread.join(timeout=5)


def test_console_and_check_stream_agree_on_a_corpus_of_broken_streams(
    page, site_url, tmp_path, served_stream, fake_server
):
    fake, base = fake_server
    seen_rules = set()
    for name, breaking in BROKEN.items():
        fake.payload = b"\n\n".join(breaking(served_stream)) + b"\n\n"
        cli = _findings_of_the_cli(tmp_path, fake.payload)
        assert cli, name
        status = _console(page, site_url, base, STREAM_BODY)
        assert "violation" in status.inner_text(), name
        console = _findings_of_the_console(page)
        # The same rules on the same events; the same words, but for the schema library's own.
        assert [(seq, rule) for seq, rule, _ in console] == [(seq, rule) for seq, rule, _ in cli], name
        for (_, rule, said), (_, _, told) in zip(console, cli, strict=True):
            if rule == "schema":  # `<type> does not match its schema: <path>: <the library's message>`
                assert said.split(": ")[:2] == told.split(": ")[:2], (name, said, told)
            else:
                assert said == told, name
        seen_rules |= {rule for _, rule, _ in cli}
        rows = page.locator(".orspec-event.orspec-invalid").evaluate_all(
            "rs => rs.map(r => [r.dataset.seq ?? '?', [...r.querySelectorAll('li.orspec-error')].map(l => l.dataset.rule)])"
        )
        assert all(rules for _, rules in rows), (name, rows)  # a row is marked for an error on it
        on_rows = [(seq, rule) for seq, rules in rows for rule in rules]
        assert set(on_rows) <= {(seq, rule) for seq, rule, _ in cli}, (name, on_rows)
    assert {
        "schema",
        "part-bracket",
        "in-progress-first",
        "sequence",
        "after-terminal",
        "one-terminal",
        "done-marker",
    } <= seen_rules
    assert page.blocked == [] and page.errors == []


def test_console_marks_a_broken_event_and_links_its_rule(page, site_url, served_stream, fake_server):
    fake, base = fake_server
    fake.payload = b"\n\n".join(BROKEN["schema"](served_stream)) + b"\n\n"
    _console(page, site_url, base, STREAM_BODY)
    seq = _event(served_stream[_first(served_stream, "response.output_text.delta")])["sequence_number"]
    broken = page.locator(f'.orspec-event[data-seq="{seq}"]')
    assert "orspec-invalid" in broken.get_attribute("class")
    link = broken.locator('li[data-rule="schema"] a')
    assert link.inner_text() == "schema"
    assert "delta" in broken.locator('li[data-rule="schema"]').inner_text()
    broken.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "docs-console-violation.png"), full_page=False)
    link.click()  # to the rule on the stream rules page
    page.wait_for_url(f"{site_url}/reference/stream-rules/#rule-schema")
    assert page.locator("h2#rule-schema").is_visible()


def test_a_release_page_checks_with_that_release_s_schemas(page, site_url, served_stream, fake_server):
    """`logprobs` on a text delta is required in 2026-01-15 and optional since: a delta without it
    breaks that release's schema only."""
    fake, base = fake_server
    without = _changed(served_stream, "response.output_text.delta", lambda e: e.pop("logprobs"))
    fake.payload = b"\n\n".join(without) + b"\n\n"
    seq = _event(without[_first(without, "response.output_text.delta")])["sequence_number"]
    verdicts = {}
    for folder in ("2026-01-15/", "2026-04-24/", ""):
        _console(page, site_url, base, STREAM_BODY, f"reference/{folder}http-api/")
        verdicts[folder] = _findings_of_the_console(page)
    assert [(s, rule) for s, rule, _ in verdicts["2026-01-15/"]] == [(str(seq), "schema")]
    assert "logprobs" in verdicts["2026-01-15/"][0][2]
    assert verdicts["2026-04-24/"] == verdicts[""] == []
    assert page.blocked == [] and page.errors == []


def test_site_loads_and_works_with_every_other_host_blocked(page, site_url):
    for path in ("/", "/reference/", "/reference/event-catalogue/", "/reference/2026-04-24/http-api/"):
        page.goto(f"{site_url}{path}")
        page.wait_for_load_state("networkidle")
        assert page.locator("h1").first.is_visible(), path
    assert page.locator(".orspec-console-form").count() >= 1  # the console's script ran
    assert page.locator(".orspec-version-select").count() == 1  # and the picker's
    page.goto(f"{site_url}/")
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially("compaction", delay=10)
    page.locator(".md-search-result__item:not([hidden])").first.wait_for(state="visible")  # this version's
    assert page.blocked == [], page.blocked  # nothing was even asked of another host
    assert page.errors == []


OVERFLOW = "() => ({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})"


@pytest.mark.parametrize("width", [1280, 400])
def test_no_horizontal_overflow(page, site_url, width):
    page.set_viewport_size({"width": width, "height": 900})
    with orspec_serve("--delay", "0", "--cors-origin", site_url) as base:
        _console(page, site_url, base, STREAM_BODY)
        box = page.evaluate(OVERFLOW)
        assert box["scroll"] <= box["client"], ("console", box)
        page.screenshot(path=str(ARTIFACTS / f"docs-console-{width}.png"), full_page=True)
    for path in ("/", "/reference/2026-04-24/items/", "/reference/2026-04-24/changes/", "/reference/changes/"):
        page.goto(f"{site_url}{path}")
        box = page.evaluate(OVERFLOW)
        assert box["scroll"] <= box["client"], (path, box)
    page.screenshot(path=str(ARTIFACTS / f"docs-changes-{width}.png"), full_page=False)


def _form(page, method: str, path: str):
    return page.locator(f'.orspec-console-form[data-method="{method}"][data-path="{path}"]')


def test_console_fills_path_parameters_keeps_its_state_and_copies_as_curl(page, site_url, tmp_path):
    with orspec_serve("--delay", "0", "--cors-origin", site_url) as base:
        page.goto(f"{site_url}/reference/http-api/")
        create = _form(page, "POST", "/responses").first
        create.locator("[name=base]").fill(base)
        create.locator("[name=key]").fill(API_KEY)
        # The model picker offers the spec's example's model and sets the body's.
        assert create.locator("[name=model]").input_value() == "example-model"
        assert page.locator("datalist option").first.get_attribute("value") == "example-model"
        create.locator("[name=model]").fill("demo")
        assert json.loads(create.locator("[name=body]").input_value())["model"] == "demo"
        create.locator("[name=body]").fill(json.dumps({**STREAM_BODY, "stream": False}))
        create.locator("button[type=submit]").click()
        answer = page.locator(".orspec-answer").first
        answer.wait_for(state="visible")
        created = json.loads(answer.inner_text())["id"]

        page.goto(f"{site_url}/reference/http-openai/")
        get = _form(page, "GET", "/responses/{response_id}")
        assert get.locator("[name=base]").input_value() == base  # the server and key are kept in the tab
        get.locator("button[type=submit]").click()
        missing = page.locator(".orspec-missing")
        missing.wait_for(state="visible")
        assert "response_id" in missing.inner_text()  # asked for, not sent as `{response_id}`
        get.locator('[name="path:response_id"]').fill(created)
        get.locator('[name="query:include"]').fill("message.output_text.logprobs")
        get.locator("[name=headers]").fill("X-Console-Test: yes")
        get.locator("button[type=submit]").click()
        console = get.locator("xpath=..")
        status = console.locator(".orspec-status")
        status.wait_for(state="visible")
        assert status.inner_text().startswith("200 "), status.inner_text()
        assert json.loads(console.locator(".orspec-answer").inner_text())["id"] == created

        get.locator(".orspec-copy-curl").click()
        command = get.locator(".orspec-curl").inner_text()
        assert API_KEY not in command and "$OPENRESPONSES_API_KEY" in command
        assert f"/responses/{created}?include=message.output_text.logprobs" in command
        ran = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            env={**os.environ, "OPENRESPONSES_API_KEY": API_KEY},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout)["id"] == created

        # Each operation's form comes back as the reader left it, in this tab only.
        page.reload()
        get = _form(page, "GET", "/responses/{response_id}")
        assert get.locator('[name="path:response_id"]').input_value() == created
        assert get.locator("[name=headers]").input_value() == "X-Console-Test: yes"
        assert (
            _form(page, "DELETE", "/responses/{response_id}").locator('[name="path:response_id"]').input_value() == ""
        )
        page.goto(f"{site_url}/reference/http-api/")
        assert _form(page, "POST", "/responses").first.locator("[name=model]").input_value() == "demo"
    assert page.blocked == [] and page.errors == []
    get = page.locator(".orspec-console").first
    get.screenshot(path=str(ARTIFACTS / "docs-console-fields.png"))


def test_version_picker_stays_in_the_header_at_400_px(page, site_url):
    page.set_viewport_size({"width": 400, "height": 800})
    page.goto(f"{site_url}/reference/2026-04-24/items/")
    picker = page.locator(".md-header .orspec-version-select")
    picker.wait_for(state="visible")
    page.mouse.wheel(0, 20_000)  # far down the page
    page.wait_for_function("window.scrollY > 2000")
    box, header = picker.bounding_box(), page.locator(".md-header").bounding_box()
    assert box["y"] >= header["y"] and box["y"] + box["height"] <= header["y"] + header["height"], (box, header)
    assert box["x"] >= 0 and box["x"] + box["width"] <= 400, box
    assert picker.input_value() == "2026-04-24"
    box = page.evaluate(OVERFLOW)
    assert box["scroll"] <= box["client"], box
    page.screenshot(path=str(ARTIFACTS / "docs-sticky-picker-400.png"), full_page=False)
    pick(page, "2026-01-15")  # to the schema scrolled to, in the other release
    page.wait_for_url(re.compile(re.escape(f"{site_url}/reference/2026-01-15/items/#") + r"\w+"))
    assert page.blocked == [] and page.errors == []


def test_home_page_reference_links_lead_to_the_latest_release(page, site_url):
    page.goto(f"{site_url}/")
    page.locator("table a", has_text="Reference").click()
    page.wait_for_url(f"{site_url}/reference/2026-04-24/")
    assert page.locator(".orspec-version-select").input_value() == "2026-04-24"


def _search(page, words: str):
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially(words, delay=10)
    page.locator(".md-search-result__item").first.wait_for(state="attached")
    page.wait_for_function(
        "document.querySelectorAll('.md-search-result__item:not([data-orspec-version])').length === 0"
    )


def _results(page) -> list[tuple[str, bool]]:
    """(version label, shown) of each search result on a reference page."""
    return [
        tuple(row)
        for row in page.locator(".md-search-result__item").evaluate_all(
            "items => items.map(i => [i.dataset.orspecVersion, !i.hidden])"
        )
    ]


def test_search_results_are_labelled_by_version_and_limited_to_the_page_s(page, site_url):
    page.goto(f"{site_url}/reference/2026-01-15/items/")
    _search(page, "FunctionCallOutput")
    results = [(version, shown) for version, shown in _results(page) if version]
    assert {version for version, _ in results} >= {"2026-01-15", "2026-04-24", "draft"}, results
    assert {version for version, shown in results if shown} == {"2026-01-15"}, results
    label = page.locator('.md-search-result__item[data-orspec-version="2026-01-15"] .orspec-search-version').first
    assert label.inner_text() == "2026-01-15"
    page.screenshot(path=str(ARTIFACTS / "docs-search-by-version.png"), full_page=False)
    hidden = sum(not shown for _, shown in _results(page))
    assert page.locator(".orspec-search-scope").inner_text().endswith(f"({hidden} more)")
    page.locator("[name=orspec-every-version]").check()
    assert {version for version, shown in _results(page) if shown and version} >= {"2026-01-15", "2026-04-24", "draft"}
    # On a guide, the reference's results are the latest release's.
    page.goto(f"{site_url}/guides/client/")
    _search(page, "FunctionCallOutput")
    assert {version for version, shown in _results(page) if shown and version} == {"2026-04-24"}
    assert page.blocked == [] and page.errors == []


def test_console_runs_a_websocket_turn_and_checks_it_live(page, site_url):
    with orspec_serve("--delay", "0", "--cors-origin", site_url) as base:
        page.goto(f"{site_url}/reference/http-api/")
        form = _form(page, "POST", "/responses").first
        form.locator("[name=base]").fill(base)
        form.locator("[name=key]").fill(API_KEY)
        form.locator("[name=body]").fill(json.dumps({"model": "demo", "input": "Write a haiku about the sea."}))
        form.locator(".orspec-websocket").click()
        status = page.locator(".orspec-stream-status.orspec-valid, .orspec-stream-status.orspec-invalid").first
        status.wait_for(state="visible")
        assert status.inner_text().endswith("every one valid"), status.inner_text()
        events = page.locator(".orspec-event")
        assert events.count() > 5 and events.last.get_attribute("data-type") == "response.completed"
        assert page.locator(".orspec-event.orspec-invalid").count() == 0
        response = json.loads(page.locator(".orspec-accumulated").inner_text())
        assert response["status"] == "completed" and response["output"][0]["content"][0]["text"]
        page.locator(".orspec-console").first.screenshot(path=str(ARTIFACTS / "docs-console-websocket.png"))
        # A wrong key: refused, and said so.
        form.locator("[name=key]").fill("not-the-key")
        form.locator(".orspec-websocket").click()
        refused = page.locator(".orspec-console-output p.orspec-invalid", has_text="closed before the turn ended")
        refused.wait_for(state="visible")
    assert page.blocked == []


def test_console_marks_a_broken_websocket_turn_as_check_stream_does(page, site_url, tmp_path, served_stream):
    from websockets.sync.server import serve

    broken = BROKEN["schema"](served_stream)
    events = [frame.split(b"data: ", 1)[1].decode() for frame in broken if _event(frame) is not None]
    cli = [(seq, rule) for seq, rule, _ in _findings_of_the_cli(tmp_path, b"\n\n".join(broken) + b"\n\n")]

    def turn(socket):
        socket.recv(timeout=10)  # the page's response.create
        for event in events:
            socket.send(event)
        socket.recv(timeout=10)  # until the page closes

    server = serve(turn, "127.0.0.1", 0, subprotocols=["openresponses"])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        page.goto(f"{site_url}/reference/http-api/")
        form = _form(page, "POST", "/responses").first
        form.locator("[name=base]").fill(f"http://127.0.0.1:{server.socket.getsockname()[1]}/v1")
        form.locator("[name=key]").fill(API_KEY)
        form.locator(".orspec-websocket").click()
        status = page.locator(".orspec-stream-status.orspec-invalid")
        status.wait_for(state="visible")
    finally:
        server.shutdown()
        thread.join(timeout=5)
    console = [(seq, rule) for seq, rule, _ in _findings_of_the_console(page)]
    assert console == cli, (console, cli)  # the same findings: the capture ends with [DONE], the turn needs none
    assert any(rule == "schema" for _, rule in console)
