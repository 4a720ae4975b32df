"""Run the compliance cases against a server and report one result per case."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Iterable
from dataclasses import dataclass

import httpx
from openresponses_runtime.client import APIConnectionError

from .cases import CASES, Case
from .target import CheckFailed, NotServed, Target

__all__ = ["Result", "run", "select"]


@dataclass(frozen=True)
class Result:
    """The outcome of one case: `ok`, and why not."""

    case: Case
    ok: bool
    reason: str
    seconds: float
    skipped: bool = False  # an extension or optional case whose operation the server does not serve (`ok` then)

    def line(self) -> str:
        if self.skipped:
            return f"SKIP {self.case.id}: {self.reason}"
        return f"PASS {self.case.id}" if self.ok else f"FAIL {self.case.id}: {self.reason}"

    def as_json(self) -> dict:
        return {
            "id": self.case.id,
            "title": self.case.title,
            "group": self.case.group,
            "status": "skip" if self.skipped else "pass" if self.ok else "fail",
            "extension": self.case.extension,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "sends": self.case.sends,
            "checks": self.case.checks,
            "must": self.case.must,
        }


def select(filters: Iterable[str] | None) -> list[Case]:
    """The cases whose id matches any of `filters` (exact ids or globs such as `ws-*`); all without filters.

    Raises `ValueError` naming a filter that matches nothing.
    """
    patterns = [f.strip() for f in filters or () if f.strip()]
    if not patterns:
        return list(CASES)
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(c.id, pattern) for c in CASES):
            raise ValueError(f"no compliance test matches {pattern!r}; known: {', '.join(c.id for c in CASES)}")
    return [c for c in CASES if any(fnmatch.fnmatchcase(c.id, p) for p in patterns)]


def run_case(client: Target, case: Case) -> Result:
    start = time.perf_counter()
    try:
        case.run(client)
    except CheckFailed as exc:
        return Result(case, False, str(exc), time.perf_counter() - start)
    except NotServed as exc:  # only extension and optional cases may meet an operation the server lacks
        served = bool(case.extension or case.optional)
        return Result(case, served, str(exc), time.perf_counter() - start, skipped=served)
    except (httpx.HTTPError, APIConnectionError) as exc:
        return Result(case, False, f"HTTP failure: {type(exc).__name__}: {exc}", time.perf_counter() - start)
    except Exception as exc:  # a server that breaks the client (bad JSON, closed socket, ...) fails the case
        return Result(case, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    return Result(case, True, "", time.perf_counter() - start)


def run(
    base_url: str,
    api_key: str,
    *,
    model: str = "default",
    filters: Iterable[str] | None = None,
    timeout: float = 60.0,
    on_result=None,
) -> list[Result]:
    """Every selected case against the server at `base_url` (the root `/responses` hangs off)."""
    cases = select(filters)
    results = []
    with Target(base_url, api_key, model=model, timeout=timeout) as client:
        for case in cases:
            result = run_case(client, case)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results
