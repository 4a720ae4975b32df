"""The spec's prose is our own: no description shares seven consecutive words with upstream's."""

from __future__ import annotations

import json
import re

from orspec.bundle import bundle

from ..conftest import RELEASES, ROOT

RUN = 7


def texts(node, out: list[str]) -> list[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary", "title") and isinstance(value, str):
                out.append(value)
            elif key == "x-enumDescriptions" and isinstance(value, dict):
                out.extend(str(v) for v in value.values())
            else:
                texts(value, out)
    elif isinstance(node, list):
        for value in node:
            texts(value, out)
    return out


def runs(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9_`.]+", text.lower())
    return {" ".join(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


def test_no_description_reuses_upstream_wording(shared):
    upstream = set()
    for path in RELEASES.values():
        for text in texts(json.loads(path.read_text()), []):
            upstream |= runs(text)
    ours = texts(bundle(ROOT / "spec").document, [])
    assert len(ours) > 450  # the spec is described throughout
    copied = [(text[:80], sorted(runs(text) & upstream)[0]) for text in ours if runs(text) & upstream]
    assert copied == []
