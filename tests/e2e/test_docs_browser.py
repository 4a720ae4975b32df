"""The built docs site in a real browser: Debian's chromium driven by playwright.

Screenshots go to test-artifacts/ (gitignored). Skips when /usr/bin/chromium or playwright is absent;
.ci/run installs chromium first. Never runs `playwright install`: the system browser is used.
"""

from __future__ import annotations

import pytest

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.process]


@pytest.fixture(scope="module")
def page(browser):
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.set_default_timeout(20_000)
    try:
        yield tab
    finally:
        tab.close()


def test_home_page_renders(page, site_url):
    page.goto(f"{site_url}/")
    assert page.locator("h1").first.inner_text().startswith("Open Responses with orspec")
    assert page.locator("nav.md-nav").first.is_visible()
    page.screenshot(path=str(ARTIFACTS / "docs-home.png"), full_page=False)


def test_reference_page_renders(page, site_url):
    page.goto(f"{site_url}/reference/items/#FunctionCallOutput")
    heading = page.locator("h2#FunctionCallOutput")
    assert heading.is_visible()
    assert page.locator("table").count() > 10
    assert page.locator('a[href="../content/#InputTextContent"]').count() > 0  # cross-page type links
    page.screenshot(path=str(ARTIFACTS / "docs-reference-items.png"), full_page=False)


def test_search_finds_function_call_output(page, site_url):
    page.goto(f"{site_url}/")
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially("function_call_output", delay=10)  # typed: the theme listens to key events
    results = page.locator(".md-search-result__item:not([hidden])")  # the latest release's, and the guides
    results.first.wait_for(state="visible")
    assert "function_call_output" in page.locator(".md-search-result").inner_text()
    page.screenshot(path=str(ARTIFACTS / "docs-search.png"), full_page=False)


# Material draws each diagram into a closed shadow root; opening it lets the test see the SVG.
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { return attach.call(this, {...init, mode: "open"}); };
"""


def test_state_diagram_renders_as_svg(page, site_url):
    page.add_init_script(OPEN_SHADOW_ROOTS)
    page.goto(f"{site_url}/reference/event-catalogue/")
    svg = page.locator(".mermaid svg").first
    svg.wait_for(state="attached")  # drawn by the Mermaid copy served with the site, no network
    assert page.locator(".mermaid svg").count() >= 1
    assert svg.locator("g").count() > 3
    page.locator(".mermaid").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "docs-state-diagram.png"), full_page=False)


# Inline elements whose text has no space but that the browser laid out over more than one line.
BROKEN_IDENTIFIERS = """
() => [...document.querySelectorAll(".md-typeset table td code, .md-typeset table td a")]
    .filter((el) => !/\\s/.test(el.textContent) && el.getClientRects().length > 1)
    .map((el) => el.textContent)
"""


@pytest.mark.parametrize("width", [1280, 400])
def test_identifiers_in_field_tables_are_never_broken_mid_word(page, site_url, width):
    page.set_viewport_size({"width": width, "height": 900})
    try:
        for name in ("events", "items", "responses"):
            page.goto(f"{site_url}/reference/{name}/")
            assert page.locator("td code").count() > 20  # the check below has identifiers to look at
            assert page.evaluate(BROKEN_IDENTIFIERS) == [], name
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


@pytest.mark.parametrize("width", [1280, 400])
def test_install_command_stays_inside_its_box(page, site_url, width):
    page.set_viewport_size({"width": width, "height": 900})
    try:
        page.goto(f"{site_url}/")
        command = page.locator("pre > code", has_text="pip install").first
        box = command.evaluate("(el) => ({scroll: el.scrollWidth, client: el.clientWidth})")
        assert box["scroll"] <= box["client"], box  # nothing hidden past the right edge
        command.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"docs-install-{width}.png"), full_page=False)
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_the_chosen_sample_language_is_remembered_on_every_page(page, site_url):
    page.goto(f"{site_url}/reference/http-api/")
    page.locator(".tabbed-labels label", has_text="openai-node").first.click()
    page.goto(f"{site_url}/reference/http-openai/")  # another page, other operations
    chosen = page.locator(".tabbed-set").evaluate_all(
        "sets => sets.map(s => [...s.querySelectorAll(':scope > input')].findIndex(i => i.checked))"
    )
    labels = page.locator(".tabbed-set").first.locator(".tabbed-labels > label").all_inner_texts()
    assert len(chosen) >= 4 and set(chosen) == {labels.index("openai-node")}, (chosen, labels)
    page.goto(f"{site_url}/reference/2026-04-24/http-api/")  # and in another version
    sets = page.locator(".tabbed-set")
    visible = sets.first.locator(".tabbed-block").evaluate_all("bs => bs.map(b => b.offsetParent !== null)")
    assert visible.index(True) == labels.index("openai-node")
    page.screenshot(path=str(ARTIFACTS / "docs-samples-language.png"), full_page=False)


def test_badges_on_operations_plain_tooltips_and_marked_breaking_lines(page, site_url):
    page.goto(f"{site_url}/reference/http-api/")
    compact = page.locator("h3#op-compactResponse ~ p .orspec-badge")
    assert compact.first.inner_text() == "added in 2026-04-24"  # a badge, as schemas have
    page.goto(f"{site_url}/reference/items/")
    titles = page.locator(".orspec-badge[title]").evaluate_all("bs => bs.map(b => b.title)")
    assert len(titles) > 5
    for title in titles:
        assert not any(markup in title for markup in ("<", ">code", "&quot;", "&lt;", "`")), title
    page.goto(f"{site_url}/reference/stream-rules/#rule-sse-json")
    marked = page.locator("h2#rule-sse-json ~ div.highlight").first.locator(".hll")
    assert marked.all_inner_texts() == ['data: {"delta": "Hi"}\n'], marked.all_inner_texts()
    marked.first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "docs-rule-marked-line.png"), full_page=False)
