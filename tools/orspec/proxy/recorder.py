"""What the proxy keeps of each exchange: the `Exchange` record, its JSON line, its console line.

A record holds summaries only: timings, status, model, event counts, rule violations and
diagnoses. Bodies (the request's input, the model's output) are kept only with `--record-bodies`,
and secrets never: the `Authorization` header is never read into a record, any field named like a
credential (or `encrypted_content`, sealed reasoning) is replaced, at any depth, and the client's
bearer token is blanked wherever it might appear.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from openresponses_runtime.redaction import REDACTED, public_urls, secret_name
from openresponses_runtime.server.errors import OpenResponsesError

from ..report import percentile

__all__ = ["Diagnosis", "Exchange", "Recorder", "RequestCheck", "scrub", "secret_name"]

# Checker rules whose messages quote streamed text: without --record-bodies the quotes are blanked.
_QUOTING_RULES = frozenset({"delta-equals-done", "item-equals-built", "terminal-output"})
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")

# Diagnoses that say something is wrong; the others (`no-done-marker`, `request-not-checked`) are observations.
PROBLEMS = frozenset(
    {
        "tool-args-stall",
        "stream-stall",
        "no-terminal",
        "client-disconnect",
        "upstream-error",
        "upstream-timeout",
        "upstream-unreachable",
        "upstream-died",
        "proxy-shutdown",
    }
)


@dataclass(frozen=True)
class RequestCheck:
    """What a server makes of a request body: its JSON (empty if not an object), the names it
    ignores, or the error it refuses it with."""

    data: dict[str, Any]
    ignored: tuple[str, ...] = ()
    refusal: OpenResponsesError | None = None


@dataclass(slots=True)
class Diagnosis:
    """Something the proxy saw happen to an exchange (a stall, a disconnect, a failed upstream)."""

    kind: str
    message: str


@dataclass(slots=True)
class Exchange:
    """One request and its answer (one turn, on a WebSocket), as it is recorded."""

    method: str
    path: str
    transport: str = "json"  # json | sse | websocket
    id: str = field(default_factory=lambda: "px_" + secrets.token_hex(8))
    started: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))
    status: int | None = None
    upstream_status: int | None = None
    model: str | None = None
    response_id: str | None = None
    ttfb_ms: float | None = None  # from the request's arrival to the first byte sent to the client
    upstream_ttfb_ms: float | None = None  # of which waiting for the upstream's first byte
    total_ms: float | None = None
    bytes: int = 0
    events: dict[str, int] = field(default_factory=dict)
    request_problems: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # what the server leaves out: `parameter:x`, `tool:y`
    refused: dict[str, Any] | None = None  # the error a server (strict with --enforce) refuses the request with
    response_problems: list[str] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    request_body: Any = None  # only with --record-bodies
    response_body: Any = None  # only with --record-bodies
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def check(self, check: RequestCheck) -> RequestCheck:
        """Take in what the server's checks made of the request; returns it."""
        model = check.data.get("model")
        self.model = model if isinstance(model, str) else None
        self.ignored = list(check.ignored)
        if check.refusal is not None:
            self.request_problems = [check.refusal.message]
            self.refused = {"status": check.refusal.status, **check.refusal.payload()}
        return check

    def first_byte(self) -> None:
        if self.ttfb_ms is None:
            self.ttfb_ms = round((time.perf_counter() - self._t0) * 1000, 3)

    def upstream_first_byte(self, sent_at: float) -> None:
        if self.upstream_ttfb_ms is None:
            self.upstream_ttfb_ms = round((time.perf_counter() - sent_at) * 1000, 3)

    def end(self) -> None:
        self.total_ms = round((time.perf_counter() - self._t0) * 1000, 3)

    def diagnose(self, kind: str, message: str) -> None:
        if all(d.kind != kind for d in self.diagnoses):
            self.diagnoses.append(Diagnosis(kind, message))

    @property
    def ok(self) -> bool:
        return not (
            self.request_problems
            or self.response_problems
            or self.violations
            or any(d.kind in PROBLEMS for d in self.diagnoses)
        )

    def as_record(self, *, bodies: bool, secret_values: tuple[str, ...] = ()) -> dict[str, Any]:
        # The fields as they are, not `asdict`'s deep copy: `scrub` builds the record's containers anew.
        record = {name: getattr(self, name) for name in _RECORDED if bodies or name not in _BODIES}
        record["diagnoses"] = [{"kind": d.kind, "message": d.message} for d in self.diagnoses]
        record = scrub(record, secret_values)
        if not bodies:
            for violation in record["violations"]:
                if violation["rule"] in _QUOTING_RULES:
                    violation["message"] = _QUOTED.sub("'…'", violation["message"])
        record["events"] = dict(self.events)  # event types are names the upstream chose, not fields to redact
        return record


_BODIES = frozenset({"request_body", "response_body"})
# In the order of the fields, `events` moved last; `_t0` is the clock the timings start from, not a field to record.
_RECORDED = tuple(f.name for f in fields(Exchange) if f.name not in ("_t0", "events"))


def scrub(value: Any, secret_values: tuple[str, ...] = ()) -> Any:
    """`value` with credential-named fields replaced (`secret_name`), every known secret value blanked
    (in object keys too), and URLs in text as `redaction.public_urls` shows them."""
    if isinstance(value, dict):
        return {
            scrub(k, secret_values): REDACTED
            if isinstance(k, str) and secret_name(k) and v is not None
            else scrub(v, secret_values)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v, secret_values) for v in value]
    if isinstance(value, str):
        for secret in secret_values:
            if secret and secret in value:
                value = value.replace(secret, REDACTED)
        value = public_urls(value)
    return value


class Recorder:
    """Writes each finished exchange: a JSON line in `directory` (if any) and a console line."""

    def __init__(
        self, directory: Path | None = None, *, bodies: bool = False, console: TextIO | None = sys.stderr
    ) -> None:
        self.bodies = bodies
        self.console = console
        self.path: Path | None = None
        self._file: TextIO | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            self.path = directory / f"proxy-{stamp}-{os.getpid()}-{secrets.token_hex(3)}.jsonl"
            self._file = self.path.open("a", encoding="utf-8")
        self.exchanges = 0
        self.by_transport: Counter[str] = Counter()
        self.by_status: Counter[int | None] = Counter()
        self.rules: Counter[str] = Counter()
        self.diagnoses: Counter[str] = Counter()
        self.with_problems = 0
        self.ttfb: list[float] = []
        self.total: list[float] = []

    def record(self, exchange: Exchange, secret_values: tuple[str, ...] = ()) -> None:
        self.exchanges += 1
        self.by_transport[exchange.transport] += 1
        self.by_status[exchange.status] += 1
        self.rules.update(v["rule"] for v in exchange.violations)
        self.diagnoses.update(d.kind for d in exchange.diagnoses)
        self.with_problems += not exchange.ok
        if exchange.ttfb_ms is not None:
            self.ttfb.append(exchange.ttfb_ms)
        if exchange.total_ms is not None:
            self.total.append(exchange.total_ms)
        if self._file is not None:
            line = json.dumps(exchange.as_record(bodies=self.bodies, secret_values=secret_values), ensure_ascii=False)
            self._file.write(line + "\n")
            self._file.flush()
        if self.console is not None:
            print(console_line(exchange), file=self.console, flush=True)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def summary(self) -> str:
        """The table printed when the proxy stops."""
        rows = [
            ("exchanges", str(self.exchanges)),
            ("with problems", str(self.with_problems)),
            ("transports", _counts(self.by_transport)),
            ("statuses", _counts(self.by_status)),
            ("time to first byte", _percentiles(self.ttfb)),
            ("total time", _percentiles(self.total)),
            ("violations by rule", _counts(self.rules)),
            ("diagnoses", _counts(self.diagnoses)),
        ]
        if self.path is not None:
            rows.append(("records", str(self.path)))
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"  {name.ljust(width)}  {value}" for name, value in rows)


def console_line(exchange: Exchange) -> str:
    when = exchange.started[11:19]
    events = sum(exchange.events.values())
    parts = [when, exchange.method, exchange.path, exchange.transport, str(exchange.status or "-")]
    if exchange.model:
        parts.append(exchange.model)
    if events:
        parts.append(f"{events} events")
    if exchange.ttfb_ms is not None:
        parts.append(f"ttfb {exchange.ttfb_ms:.1f}ms")
    if exchange.total_ms is not None:
        parts.append(f"total {exchange.total_ms:.0f}ms")
    found = [f"{rule}×{n}" if n > 1 else rule for rule, n in Counter(v["rule"] for v in exchange.violations).items()]
    found += [f"request:{len(exchange.request_problems)}"] if exchange.request_problems else []
    found += [f"refused:{exchange.refused['code']}"] if exchange.refused else []
    found += [f"ignored:{len(exchange.ignored)}"] if exchange.ignored else []
    found += [f"response:{len(exchange.response_problems)}"] if exchange.response_problems else []
    found += [d.kind for d in exchange.diagnoses]
    parts.append(("ok" if exchange.ok else "✗") + (" " + " ".join(found) if found else ""))
    return " ".join(parts)


def _counts(counter: Counter) -> str:
    return ", ".join(f"{key} {n}" for key, n in counter.most_common()) or "none"


def _percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    # The report's percentile, so the console and `orspec report` agree on the same exchanges.
    return f"p50 {percentile(values, 50):.1f}ms  p95 {percentile(values, 95):.1f}ms  max {max(values):.1f}ms"
