"""A crawl of the built site: every page reached from the home page, the root's llms files and each
version's, with every link, script, stylesheet and anchor they hold checked to lead somewhere."""

from __future__ import annotations

import re
from collections import deque
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import httpx
import pytest

pytestmark = [pytest.mark.process, pytest.mark.slow]  # the crawl reads every page and link in this process

MARKDOWN_LINK = re.compile(r"\]\(([^)\s]*)\)")
LLMS = ("llms.txt", "llms-full.txt")


class _Page(HTMLParser):
    """The links (a, link, script, img) and the element ids of one HTML page."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(found["id"])
        target = found.get("href") if tag in ("a", "link") else found.get("src") if tag in ("script", "img") else None
        if target is not None:
            self.links.append(target)


def _crawl(site_url: str) -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """The pages reached (URL -> its ids, None for a file that is not HTML) and every (from, link) found."""
    client = httpx.Client(timeout=20)
    pages: dict[str, set[str] | None] = {}
    links: list[tuple[str, str]] = []
    todo = deque([f"{site_url}/", *(f"{site_url}/{name}" for name in LLMS)])
    while todo:
        url = todo.popleft()
        if url in pages:
            continue
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.status_code)
        pages[url] = None
        if "text/html" in answer.headers.get("content-type", ""):
            parsed = _Page()
            parsed.feed(answer.text)
            pages[url], found = parsed.ids, parsed.links
        elif url.endswith(".txt"):
            found = MARKDOWN_LINK.findall(answer.text)
        else:
            continue
        for link in found:
            links.append((url, link))
            target = urldefrag(urljoin(url, link)).url
            if urlsplit(target).netloc == urlsplit(site_url).netloc and target not in pages:
                todo.append(target)
    client.close()
    return pages, links


def test_crawl_of_the_site_and_its_llms_files_finds_no_broken_link(site_url):
    pages, links = _crawl(site_url)
    broken = []
    for source, link in links:
        if link == "" or link.startswith("#") and not link[1:] and source.endswith(".txt"):
            broken.append((source, link or "(empty)"))
            continue
        target, anchor = urldefrag(urljoin(source, link))
        if urlsplit(target).netloc != urlsplit(site_url).netloc:
            continue  # another site: a link to read, not a load
        ids = pages.get(target)
        if anchor and ids is not None and unquote(anchor) not in ids:
            broken.append((source, link))
    assert broken == [], broken[:20]
    html_pages = [url for url, ids in pages.items() if ids is not None]
    assert len(html_pages) > 50 and len(links) > 5000, (len(html_pages), len(links))
    for folder in ("", "reference/", "reference/2026-04-24/", "reference/2026-01-15/"):
        for name in LLMS:
            assert f"{site_url}/{folder}{name}" in pages, (folder, name)
    # The root's llms-full.txt is the latest release's, its links to that release's pages.
    full = httpx.get(f"{site_url}/llms-full.txt", timeout=20).text
    targets = MARKDOWN_LINK.findall(full)
    assert targets and all(not t.endswith(".md") and ".md#" not in t for t in targets), targets[:5]
    assert sum(t.startswith("reference/2026-04-24/") for t in targets) > 0.9 * len(targets)
