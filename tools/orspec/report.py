"""`orspec report DIR`: what `orspec proxy --record DIR` saw, as one self-contained HTML page or Markdown.

The records are read into a `Summary` (counts, percentiles, examples); the templates in
`templates/report/` lay it out. The HTML page loads nothing: its two charts (exchanges over time,
time-to-first-byte and total-time percentiles) are inline SVG drawn from geometry computed here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from .project import TEMPLATES

__all__ = ["ReportError", "Summary", "load_records", "render", "summarize"]

PERCENTILES = (50, 90, 95, 99)
_BINS = 48
# Diagnoses that are observations rather than faults (see `orspec.proxy.recorder.PROBLEMS`).
_OBSERVATIONS = frozenset({"no-done-marker", "request-not-checked"})


class ReportError(Exception):
    """The directory holds no records the report can read."""


def load_records(directory: Path) -> list[dict[str, Any]]:
    """Every record in the `*.jsonl` files of `directory`, oldest first.

    A line that is not a JSON object is an error that names its file and line.
    """
    if not directory.is_dir():
        raise ReportError(f"{directory}: no such directory")
    files = sorted(directory.glob("*.jsonl"))
    if not files:
        raise ReportError(f"{directory}: no *.jsonl records (write them with `orspec proxy --record {directory}`)")
    records = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text at byte {exc.start}"
            raise ReportError(
                f"{path}: cannot read it ({reason}); records are the JSON lines `orspec proxy` writes"
            ) from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ReportError(f"{path}:{number}: not a JSON line ({exc.args[0]})") from None
            if not isinstance(record, dict) or not isinstance(record.get("started"), str):
                raise ReportError(f"{path}:{number}: not an exchange record (no `started` time)")
            records.append(record)
    records.sort(key=lambda r: r["started"])
    return records


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile `q` (0-100) of `values`."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil without floats
    return ordered[int(rank) - 1]


@dataclass
class Finding:
    """A rule or diagnosis with how often it was seen and one exchange that shows it."""

    name: str
    count: int
    exchanges: int
    example_id: str
    example: str
    description: str = ""


@dataclass
class Summary:
    records: int
    first: str
    last: str
    with_problems: int
    transports: list[tuple[str, int]]
    statuses: list[tuple[str, int]]
    models: list[tuple[str, int]]
    timings: list[dict[str, Any]]  # one row per measure: name, count, p50... max
    violations: list[Finding]
    diagnoses: list[Finding]
    request_problems: list[Finding]
    ignored: list[Finding]  # parameters and tools a server leaves out (`parameter:x`, `tool:y`)
    refused: list[Finding]  # refusals, by code and param
    response_problems: list[Finding]
    events: list[tuple[str, int, float]]  # type, count, share
    timeline: dict[str, Any] = field(default_factory=dict)  # SVG geometry
    latency_chart: dict[str, Any] = field(default_factory=dict)


def _has_problem(record: dict[str, Any]) -> bool:
    return bool(
        record.get("violations")
        or record.get("request_problems")
        or record.get("response_problems")
        or any(d.get("kind") not in _OBSERVATIONS for d in record.get("diagnoses") or ())
    )


def _findings(records: list[dict[str, Any]], pick, descriptions: dict[str, str] | None = None) -> list[Finding]:
    """Group what `pick(record)` yields as (name, example text) pairs."""
    counts: Counter[str] = Counter()
    exchanges: Counter[str] = Counter()
    examples: dict[str, tuple[str, str]] = {}
    for record in records:
        seen = set()
        for name, text in pick(record):
            counts[name] += 1
            if name not in seen:
                exchanges[name] += 1
                seen.add(name)
            examples.setdefault(name, (str(record.get("id", "?")), text))
    return [
        Finding(name, n, exchanges[name], *examples[name], (descriptions or {}).get(name, ""))
        for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _violation_text(v: dict[str, Any]) -> str:
    seq = v.get("sequence_number")
    return f"seq {'?' if seq is None else seq}: {v.get('message', '')}"


def _refusal(error: dict[str, Any]) -> tuple[str, str]:
    """A refusal's name (`unsupported_tool_type tools[4].type`) and its message."""
    name = " ".join(str(error[key]) for key in ("code", "param") if error.get(key))
    return name or "refused", str(error.get("message", ""))


def _rule_descriptions() -> dict[str, str]:
    try:
        from openresponses_runtime.events import RULES
    except ImportError:  # pragma: no cover - the runtime ships with orspec
        return {}
    return dict(RULES)


def _timeline(records: list[dict[str, Any]], width: int = 720, height: int = 160) -> dict[str, Any]:
    times = [datetime.fromisoformat(r["started"]).timestamp() for r in records]
    start, end = min(times), max(times)
    span = max(end - start, 1e-3)
    ok = [0] * _BINS
    bad = [0] * _BINS
    for when, record in zip(times, records, strict=True):
        index = min(_BINS - 1, int((when - start) / span * _BINS))
        (bad if _has_problem(record) else ok)[index] += 1
    top = max(max(o + b for o, b in zip(ok, bad, strict=True)), 1)
    bar = width / _BINS
    bars = []
    for i in range(_BINS):
        x = round(i * bar + 1, 1)
        h_ok = round(ok[i] / top * height, 1)
        h_bad = round(bad[i] / top * height, 1)
        label = datetime.fromtimestamp(start + span * i / _BINS, UTC).strftime("%H:%M:%S")
        bars.append(
            {"x": x, "w": round(bar - 2, 1), "ok": ok[i], "bad": bad[i], "h_ok": h_ok, "h_bad": h_bad, "label": label}
        )
    return {
        "width": width,
        "height": height,
        "bars": bars,
        "top": top,
        "start": datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "end": datetime.fromtimestamp(end, UTC).strftime("%H:%M:%S"),
    }


def _latency_chart(timings: list[dict[str, Any]], width: int = 720, row: int = 22) -> dict[str, Any]:
    """Horizontal bars, one per (measure, percentile), on one shared scale."""
    rows = [(t["name"], f"p{q}", t[f"p{q}"]) for t in timings for q in PERCENTILES if t.get(f"p{q}") is not None]
    top = max((value for _, _, value in rows), default=1) or 1
    label_width = 220
    bars = [
        {
            "y": i * row,
            "label": f"{name} {q}",
            "value": value,
            "w": round(value / top * (width - label_width - 80), 1),
            "kind": "total" if name == "total time" else "ttfb",
        }
        for i, (name, q, value) in enumerate(rows)
    ]
    return {"width": width, "height": len(rows) * row, "bars": bars, "label_width": label_width, "row": row}


def summarize(records: list[dict[str, Any]]) -> Summary:
    transports = Counter(str(r.get("transport")) for r in records)
    statuses = Counter(str(r.get("status")) for r in records)
    models = Counter(str(r["model"]) for r in records if r.get("model"))
    timings = []
    measures = {
        "time to first byte": [r.get("ttfb_ms") for r in records],
        # What the proxy itself added before the first byte, beyond waiting for the upstream.
        "the proxy's own share of it": [
            r["ttfb_ms"] - r["upstream_ttfb_ms"]
            for r in records
            if isinstance(r.get("ttfb_ms"), int | float) and isinstance(r.get("upstream_ttfb_ms"), int | float)
        ],
        "total time": [r.get("total_ms") for r in records],
    }
    for name, found in measures.items():
        values = [float(v) for v in found if isinstance(v, int | float)]
        if not values and name == "the proxy's own share of it":
            continue
        row: dict[str, Any] = {"name": name, "count": len(values)}
        row |= {f"p{q}": percentile(values, q) for q in PERCENTILES}
        row["max"] = max(values) if values else None
        timings.append(row)
    events: Counter[str] = Counter()
    for record in records:
        events.update({k: int(v) for k, v in (record.get("events") or {}).items()})
    total_events = sum(events.values()) or 1
    summary = Summary(
        records=len(records),
        first=records[0]["started"],
        last=records[-1]["started"],
        with_problems=sum(_has_problem(r) for r in records),
        transports=transports.most_common(),
        statuses=sorted(statuses.items()),
        models=models.most_common(),
        timings=timings,
        violations=_findings(
            records,
            lambda r: [(v.get("rule", "?"), _violation_text(v)) for v in r.get("violations") or ()],
            _rule_descriptions(),
        ),
        diagnoses=_findings(
            records, lambda r: [(d.get("kind", "?"), d.get("message", "")) for d in r.get("diagnoses") or ()]
        ),
        request_problems=_findings(records, lambda r: [("request", p) for p in r.get("request_problems") or ()]),
        ignored=_findings(records, lambda r: [(name, name) for name in r.get("ignored") or ()]),
        refused=_findings(records, lambda r: [_refusal(r["refused"])] if isinstance(r.get("refused"), dict) else []),
        response_problems=_findings(records, lambda r: [("response", p) for p in r.get("response_problems") or ()]),
        events=[(kind, n, n / total_events) for kind, n in events.most_common()],
    )
    summary.timeline = _timeline(records)
    summary.latency_chart = _latency_chart(timings)
    return summary


def render(records: list[dict[str, Any]], fmt: str = "html") -> str:
    """The report as HTML (`fmt="html"`) or Markdown (`"md"`)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES / "report"),
        autoescape=jinja2.select_autoescape(("html.jinja",)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["ms"] = lambda v: "–" if v is None else f"{v:.1f} ms"
    env.filters["md"] = _markdown_cell
    env.filters["code"] = _markdown_code
    return env.get_template(f"report.{fmt}.jinja").render(s=summarize(records))


def _markdown_cell(value: Any) -> str:
    """Text safe inside a Markdown table cell: no markup, no raw HTML, no line break."""
    text = " ".join(str(value).split())
    for char in "\\|`*_[]<>":
        text = text.replace(char, "\\" + char)
    return text


def _markdown_code(value: Any, *, cell: bool = True) -> str:
    """`value` as one Markdown code span that nothing in it can end early.

    Backslashes do not escape inside a code span, so the fence is one backtick longer than the
    longest run of backticks in the text, with a space inside each end when the text begins or ends
    with one (CommonMark strips those two spaces). Inside a code span no HTML renders. In a table
    `cell`, a pipe is written `\\|`, which GFM reads as a pipe of the cell's text, even in code."""
    text = " ".join(str(value).split()) or " "
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "
    if cell:
        text = text.replace("|", "\\|")
    return f"{fence}{text}{fence}"
