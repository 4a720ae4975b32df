"""The versioned reference as `orspec build` writes it: a folder per release, the map the version
picker reads, the history badges and what-changed pages from `orspec diff`'s rules, and the plain
Markdown of llms.txt."""

from __future__ import annotations

import json
import re

import pytest
from orspec.bundle import bundle
from orspec.generate.history import build_history
from orspec.llms import llms_files, plain, published
from orspec.releases import load_releases

from ..conftest import ROOT

DOCS = ROOT / "generated" / "docs"


@pytest.fixture(scope="module")
def history():
    releases, problems = load_releases(ROOT / "spec")
    assert not problems
    return build_history([(r.date, r.document) for r in releases] + [("draft", bundle(ROOT / "spec").document)])


def test_each_release_has_its_reference_and_the_map_lists_them_newest_first():
    versions = json.loads((DOCS / "versions.json").read_text())["versions"]
    assert [(v["id"], v["status"], v["folder"]) for v in versions] == [
        ("2026-04-24", "latest", "2026-04-24/"),
        ("2026-01-15", "release", "2026-01-15/"),
        ("draft", "draft", ""),
    ]
    for version in versions:
        for page in version["pages"]:
            assert (DOCS / version["folder"] / page).is_file()
        for anchor, page in version["anchors"].items():
            assert f"{{ #{anchor} }}" in (DOCS / version["folder"] / page).read_text()
    older, newer = versions[1]["anchors"], versions[0]["anchors"]
    assert "Message" in older and "CompactionBody" not in older and "CompactionBody" in newer
    assert "2026-04-24" in (DOCS / "2026-04-24" / "index.md").read_text()


def test_history_says_what_each_release_added_changed_and_removed(history):
    assert [(s.version, s.kind) for s in history.of_schema("CompactionBody")] == [("2026-04-24", "added")]
    assert [(s.version, s.kind) for s in history.of_schema("Message", "phase")] == [("2026-04-24", "added")]
    logprobs = history.of_schema("OutputTextContent", "logprobs")
    assert [(s.version, s.kind) for s in logprobs] == [("2026-04-24", "changed")]
    assert "now optional" in logprobs[0].message and logprobs[0].breaking_for_clients
    compact = [(s.version, s.kind) for s in history.of_operation("POST", "/responses/compact")]
    assert compact[0] == ("2026-04-24", "added") and set(compact[1:]) == {("draft", "changed")}  # its error answers
    assert ("draft", "removed") in [(s.version, s.kind) for s in history.of_schema("DetailEnum")]
    assert history.previous == {"2026-04-24": "2026-01-15", "draft": "2026-04-24"}


def test_pages_carry_the_badges_and_a_what_changed_page_per_version():
    content = (DOCS / "2026-04-24" / "content.md").read_text()
    assert 'orspec-removed" title="schema DetailEnum removed">removed in draft' in content
    assert "changed in 2026-04-24" in content  # OutputTextContent.logprobs became optional
    changes = (DOCS / "2026-04-24" / "changes.md").read_text()
    clients, servers = changes.split("## For servers")
    assert "## For clients" in clients
    assert "| **breaking** | [OutputTextContent.logprobs](content.md#OutputTextContent) |" in clients
    assert "| **breaking** | [AssistantMessageItemParam.phase](items.md#AssistantMessageItemParam) |" in servers
    assert not (DOCS / "2026-01-15" / "changes.md").exists()  # the first release has nothing before it
    assert (DOCS / "changes.md").read_text().startswith("# What changed in draft")


def test_llms_text_is_plain_markdown():
    page = (DOCS / "2026-04-24" / "items.md").read_text()
    text = plain(page)
    for leftover in ("<code>", "<span", "{ #", "&#124;", "&lt;", "\\_", 'class="orspec'):
        assert leftover not in text, leftover
    assert "## Message\n" in text and "`phase`" in text
    short, full = llms_files("Site", "The reference.", {"": (DOCS / "index.md").read_text(), "items/": page})
    assert short.startswith("# Site\n\n> The reference.\n\n## Reference\n")
    assert "- [Items](items/): " in short and "- [Open Responses reference](./)" in short  # no empty link
    assert "## Message\n" in full
    # Links lead to the published pages, relative to the file they are in.
    assert ".md)" not in full and ".md#" not in full
    assert "](content/#InputTextContent)" in full
    _, rooted = llms_files("Site", "The reference.", {"items/": page}, "reference/2026-04-24/")
    assert "](reference/2026-04-24/content/#InputTextContent)" in rooted


def test_a_link_of_a_page_becomes_the_published_page_s_url():
    assert published("items.md#Message", "", "") == "items/#Message"
    assert published("index.md", "items/", "") == "./"
    assert published("#Message", "items/", "") == "items/#Message"
    assert published("../guides/client.md", "client-create/", "reference/") == "guides/client/"
    assert published("openapi.json", "", "reference/") == "reference/openapi.json"
    assert published("https://example.com/a.md", "", "") == "https://example.com/a.md"


def test_each_version_ships_its_own_checker_and_models_importing_the_site_s_zod():
    from orspec.mkdocs_hooks import ZOD, _checkers

    versions = json.loads((DOCS / "versions.json").read_text())["versions"]
    modules = _checkers(DOCS, versions)
    for version in versions:
        folder = f"assets/orspec/{version['id']}/"
        mine = {uri.removeprefix(folder): text for uri, text in modules.items() if uri.startswith(folder)}
        assert {"src/streaming/checker.js", "src/streaming/schemas.js", "models.js", "events.js"} <= set(mine)
        assert 'from "zod"' not in "".join(mine.values())  # a browser has no bare specifiers to resolve
        assert 'from "../../javascripts/zod/index.js"' in mine["models.js"] and ZOD.startswith("assets/javascripts/")
        own = DOCS / version["folder"] / "checker" if version["folder"] else ROOT / "generated" / "typescript"
        written = (own / "models.js").read_text().replace('from "zod"', 'from "../../javascripts/zod/index.js"')
        assert mine["models.js"] == written
    # 2026-01-15 requires `logprobs` on a text delta; the later versions do not.
    assert modules["assets/orspec/2026-01-15/models.js"] != modules["assets/orspec/2026-04-24/models.js"]


def test_the_site_s_zod_is_the_pinned_zod():
    """The copy the site serves is zod as .ci/services pins it for the TypeScript package (the same
    bytes, where .cache/typescript has it installed)."""
    site = ROOT / "templates" / "site" / "assets" / "javascripts" / "zod"
    pinned = re.search(r"zod@(\d+\.\d+\.\d+)", (ROOT / ".ci" / "services").read_text()).group(1)
    assert json.loads((site / "package.json").read_text())["version"] == pinned
    assert (site / "LICENSE").read_text().startswith("MIT License")
    installed = ROOT / ".cache" / "typescript" / "node_modules" / "zod"
    if not installed.is_dir():
        pytest.skip("zod is not installed in .cache/typescript (.ci/services installs it)")
    for path in sorted(site.rglob("*.js")):
        assert path.read_bytes() == (installed / path.relative_to(site)).read_bytes(), path
