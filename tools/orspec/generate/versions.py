"""The reference of every dated release beside the draft's, and the map the site's version picker reads.

`orspec build` writes each release's reference into `generated/docs/<date>/` (the draft's stays at
`generated/docs/`), so the pages are committed, reviewed and covered by `--check` like every other
output: a change of the generator shows up as a diff of the old releases' pages too, and the site
is built from files alone, without loading a spec.

`generated/docs/versions.json` lists the versions, newest release first and the draft last, each
with its folder and the anchor of every schema, event and operation on its pages: the picker keeps
the reader on the same anchor in the other version, or on its index when that version has none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..releases import Release
from ..schema import build
from .docs import OUT, generate_docs
from .history import History, build_history

DRAFT = "draft"
_ANCHOR = re.compile(r"\{ #([A-Za-z0-9_-]+) \}")


def spec_history(releases: Sequence[Release], core: dict) -> History:
    """The history of the releases and the draft's core (bundled without its vendor fragments, as
    `orspec release` freezes it)."""
    return build_history([(r.date, r.document) for r in releases] + [(DRAFT, core)])


def release_docs(
    releases: Sequence[Release],
    machines: Any,
    templates: Path,
    history: History | None = None,
    draft: dict | None = None,
) -> dict[str, bytes]:
    """`docs/<date>/*.md` for each release: its frozen document read as the draft is read (with the
    `draft` document's request examples for the consoles, where the release froze none)."""
    out: dict[str, bytes] = {}
    for i, release in enumerate(releases):
        model = build(release.document, machines, releases[: i + 1])
        pages = generate_docs(
            model, templates, client_page=False, history=history, version=release.date, examples_from=draft
        )
        for path, data in pages.items():
            out[f"{OUT}/{release.date}/{path.removeprefix(OUT + '/')}"] = data
    return out


def anchors(pages: dict[str, bytes]) -> dict[str, str]:
    """Anchor -> page (relative to its version's folder) for the headings of `pages` (path -> Markdown)."""
    found: dict[str, str] = {}
    for path, data in sorted(pages.items()):
        for anchor in _ANCHOR.findall(data.decode()):
            found.setdefault(anchor, path)
    return found


def versions_map(draft_pages: dict[str, bytes], release_pages: dict[str, bytes], dates: Sequence[str]) -> bytes:
    """`docs/versions.json`: the versions and where each anchor lives in each of them."""

    def folder(pages: dict[str, bytes], prefix: str) -> dict[str, bytes]:
        return {
            p.removeprefix(prefix): d for p, d in pages.items() if p.startswith(prefix) and "/" not in p[len(prefix) :]
        }

    versions = []
    for date in reversed(dates):
        pages = folder(release_pages, f"{OUT}/{date}/")
        versions.append(
            {
                "id": date,
                "folder": f"{date}/",
                "status": "latest" if date == dates[-1] else "release",
                "pages": sorted(pages),
                "anchors": anchors(pages),
            }
        )
    pages = folder(draft_pages, f"{OUT}/")
    versions.append({"id": DRAFT, "folder": "", "status": DRAFT, "pages": sorted(pages), "anchors": anchors(pages)})
    return (json.dumps({"versions": versions}, indent=1, sort_keys=True) + "\n").encode()
