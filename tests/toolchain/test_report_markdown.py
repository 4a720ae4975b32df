"""`orspec report --format md` on hostile records: what it puts in a code span stays in it, and no
raw HTML renders, whatever an upstream named its events or a record says."""

from __future__ import annotations

import html
import json
import re

import markdown
import pytest
from markdown_it import MarkdownIt

from ..conftest import run_orspec

IMG = "<img src=x onerror=alert(1)>"
HOSTILE = [
    f"x` {IMG} `y",
    f"``{IMG}``",
    f"`{IMG}",
    "<script>alert(1)</script>",
    f"a|b {IMG} c\\|d",
    "line\nbreak <b>bold</b>",
]


def _record(i: int, text: str) -> dict:
    return {
        "id": f"px_{i}` {IMG} `",
        "started": f"2026-11-26T10:00:0{i}.000+00:00",
        "method": "POST",
        "path": "/v1/responses",
        "transport": "sse",
        "status": 200,
        "model": text,
        "ttfb_ms": 1.0,
        "total_ms": 2.0,
        "events": {text: 3, "response.created": 1},
        "violations": [{"rule": text, "sequence_number": 1, "message": text}],
        "diagnoses": [{"kind": text, "message": text}],
        "request_problems": [text],
        "response_problems": [text],
        "ignored": [f"parameter:{text}"],
        "refused": {"code": text, "param": text, "message": text, "status": 400},
    }


@pytest.fixture
def report(tmp_path) -> str:
    lines = [json.dumps(_record(i, text)) for i, text in enumerate(HOSTILE)]
    (tmp_path / "proxy-hostile.jsonl").write_text("\n".join(lines) + "\n")
    result = run_orspec("report", str(tmp_path), "--format", "md", "--out", "-")
    assert result.returncode == 0, result.stderr
    return result.stdout


# GitHub's reading (CommonMark with GFM tables, raw HTML allowed), and Python-Markdown's (mkdocs).
RENDERERS = {
    "gfm": MarkdownIt("commonmark", {"html": True}).enable("table").render,
    "python-markdown": lambda text: markdown.markdown(text, extensions=["tables"]),
}


@pytest.mark.parametrize("renderer", RENDERERS)
def test_no_raw_html_renders(report, renderer):
    rendered = RENDERERS[renderer](report)
    tags = set(re.findall(r"<([a-z][a-z0-9]*)", rendered))
    assert tags <= {"h1", "h2", "p", "strong", "table", "thead", "tbody", "tr", "th", "td", "code", "ul", "li"}, tags
    assert "onerror" not in re.sub(r"<code>.*?</code>|&lt;img[^<]*", "", rendered, flags=re.S)


def test_each_code_span_holds_its_text_whole(report):
    rendered = RENDERERS["gfm"](report)
    spans = {html.unescape(span) for span in re.findall(r"<code>(.*?)</code>", rendered, re.S)}
    for text in HOSTILE:
        flat = " ".join(text.split())
        assert flat in spans, (flat, spans)  # the event type, the rule, the diagnosis, each whole
        assert f"parameter:{flat}" in spans
    assert {f"px_{i}` {IMG} `" for i in range(len(HOSTILE))} & spans
