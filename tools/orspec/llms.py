"""`llms.txt` and `llms-full.txt` for each version of the reference: the pages as plain Markdown.

`llms.txt` follows the llmstxt.org layout (a title, a one-line summary, then a list of links with
what each page holds); `llms-full.txt` is every page of the version, one after the other. The
reference pages are written for mkdocs: heading ids (`{ #id }`), HTML for code in table cells and
badges, and entities that keep table cells whole. Here they become what a reader without a browser
needs: backticks for code, badges as words, the console's placeholder dropped, and every link
pointing at the published page (`items.md#Message` becomes `items/#Message`, relative to the file
the link is in), so that a reader of the file can follow it.
"""

from __future__ import annotations

import html
import posixpath
import re

_HEADING_ID = re.compile(r"\s*\{ #[A-Za-z0-9_-]+ \}")
_CODE = re.compile(r"<code>(.*?)</code>", re.S)
_BADGE = re.compile(r'\s*<span class="orspec-badge [^"]*"(?: title="[^"]*")?>(.*?)</span>')
_BLOCK = re.compile(r'^<div class="orspec-console".*?</div>\n?', re.M)
_VERSIONS = re.compile(r'^<div class="orspec-versions".*?</div>\n?', re.M)
_ESCAPED = re.compile(r"\\([_*\[\]#~\\])")
_TAG = re.compile(r"</?(?:br|span|div|p)[^>]*>")
_LINK = re.compile(r"(\]\()([^)\s]*)(\))")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto: ...


def published(target: str, page: str, base: str = "") -> str:
    """A link of a page's Markdown (relative to its folder, `page` its URL there: "" for the index,
    `items/`) as the URL of the published page, relative to `base`'s parent: `items.md#Message` ->
    `{base}items/#Message`, `#x` -> `{base}{page}#x`, `../guides/x.md` -> the guide's URL."""
    if not target or _EXTERNAL.match(target):
        return target
    path, sep, anchor = target.partition("#")
    if not path:
        path = page
    elif posixpath.basename(path) == "index.md":
        path = path.removesuffix("index.md")
    elif path.endswith(".md"):
        path = path.removesuffix(".md") + "/"
    folder = path.endswith("/") or not path
    url = posixpath.normpath(base + path or ".") + ("/" if folder else "")
    return url + sep + anchor


def plain(markdown: str, page: str = "", base: str = "") -> str:
    """One reference page as plain Markdown, its links to the published pages (see `published`)."""
    text = _BLOCK.sub("", _VERSIONS.sub("", markdown))
    text = _LINK.sub(lambda m: m.group(1) + published(m.group(2), page, base) + m.group(3), text)
    text = _HEADING_ID.sub("", text)
    text = _BADGE.sub(lambda m: f" ({m.group(1)})", text)
    text = _CODE.sub(lambda m: "`" + m.group(1) + "`", text)
    text = text.replace("<br>", " ")
    text = _TAG.sub("", text)
    text = _ESCAPED.sub(r"\1", text)  # Markdown's escapes of literal text, where nothing needs them
    text = text.replace("&#124;", "\\|")  # still inside a table cell
    return html.unescape(text).replace("\xa0", " ")


def title_of(markdown: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return plain(line[2:]).strip()
    return ""


def summary_of(markdown: str, page: str = "", base: str = "") -> str:
    """The first paragraph after the title, on one line."""
    lines = markdown.splitlines()
    paragraph: list[str] = []
    for line in lines[1:]:
        if line.strip() and not line.startswith(("#", "<div", "!!!", "|", "-", "```")):
            paragraph.append(line.strip())
        elif paragraph:
            break
    return plain(" ".join(paragraph), page, base).strip()


def llms_files(title: str, summary: str, pages: dict[str, str], base: str = "") -> tuple[str, str]:
    """(`llms.txt`, `llms-full.txt`) of one version: `pages` maps a page's URL (relative to `base`,
    which the links are made against) to its Markdown, the index first."""
    index = [f"# {title}", "", f"> {summary}", "", "## Reference", ""]
    full = [f"# {title}", "", f"> {summary}", ""]
    for url, markdown in pages.items():
        description = summary_of(markdown, url, base)
        link = published("#", url, base).removesuffix("#")
        index.append(f"- [{title_of(markdown) or url}]({link})" + (f": {description}" if description else ""))
        full += ["", "---", "", f"<!-- {link} -->", "", plain(markdown, url, base).strip(), ""]
    return "\n".join(index) + "\n", "\n".join(full).rstrip() + "\n"
