"""`llms.txt` and `llms-full.txt` for each version of the reference: the pages as plain Markdown.

`llms.txt` follows the llmstxt.org layout (a title, a one-line summary, then a list of links with
what each page holds); `llms-full.txt` is every page of the version, one after the other. The
reference pages are written for mkdocs: heading ids (`{ #id }`), HTML for code in table cells and
badges, and entities that keep table cells whole. Here they become what a reader without a browser
needs: backticks for code, badges as words, the console's placeholder dropped.
"""

from __future__ import annotations

import html
import re

_HEADING_ID = re.compile(r"\s*\{ #[A-Za-z0-9_-]+ \}")
_CODE = re.compile(r"<code>(.*?)</code>", re.S)
_BADGE = re.compile(r'\s*<span class="orspec-badge [^"]*"(?: title="[^"]*")?>(.*?)</span>')
_BLOCK = re.compile(r'^<div class="orspec-console".*?</div>\n?', re.M)
_VERSIONS = re.compile(r'^<div class="orspec-versions".*?</div>\n?', re.M)
_ESCAPED = re.compile(r"\\([_*\[\]#~\\])")
_TAG = re.compile(r"</?(?:br|span|div|p)[^>]*>")


def plain(markdown: str) -> str:
    """One reference page as plain Markdown."""
    text = _BLOCK.sub("", _VERSIONS.sub("", markdown))
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


def summary_of(markdown: str) -> str:
    """The first paragraph after the title, on one line."""
    lines = markdown.splitlines()
    paragraph: list[str] = []
    for line in lines[1:]:
        if line.strip() and not line.startswith(("#", "<div", "!!!", "|", "-", "```")):
            paragraph.append(line.strip())
        elif paragraph:
            break
    return plain(" ".join(paragraph)).strip()


def llms_files(title: str, summary: str, pages: dict[str, str], base: str = "") -> tuple[str, str]:
    """(`llms.txt`, `llms-full.txt`) of one version: `pages` maps a page's URL (relative to `base`,
    which the links are made against) to its Markdown, the index first."""
    index = [f"# {title}", "", f"> {summary}", "", "## Reference", ""]
    full = [f"# {title}", "", f"> {summary}", ""]
    for url, markdown in pages.items():
        description = summary_of(markdown)
        index.append(f"- [{title_of(markdown) or url}]({base}{url})" + (f": {description}" if description else ""))
        full += ["", "---", "", f"<!-- {base}{url} -->", "", plain(markdown).strip(), ""]
    return "\n".join(index) + "\n", "\n".join(full).rstrip() + "\n"
