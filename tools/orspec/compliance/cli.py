"""`orspec compliance --base-url URL --api-key KEY [--model M] [--filter IDS] [--json] [--list]`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from urllib.parse import urlsplit


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compliance", help="run the Open Responses compliance suite against a server")
    p.add_argument("--base-url", help="the API root that /responses hangs off, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key", help="the bearer token (default: $ORSPEC_API_KEY)")
    p.add_argument("--model", default="default", help="the model to ask for (default: default)")
    p.add_argument("--filter", help="comma-separated test ids or globs, e.g. basic-text,ws-*")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default: 60)")
    p.add_argument("--json", action="store_true", help="print one JSON document (for CI) instead of lines")
    p.add_argument("--list", action="store_true", help="list the tests (id, what it proves) and exit")
    p.add_argument("--wait", type=float, default=0, help="wait up to this many seconds for the server to come up")
    p.set_defaults(run=cmd_compliance)


def cmd_compliance(args: argparse.Namespace) -> int:
    from .cases import CASES
    from .runner import run, select

    if args.list:
        for case in CASES:
            print(f"{case.id}: {case.title} — {case.must}")
        return 0
    key = args.api_key or os.environ.get("ORSPEC_API_KEY")
    if not args.base_url or not key:
        print("orspec: compliance needs --base-url and --api-key (or $ORSPEC_API_KEY)", file=sys.stderr)
        return 2
    parts = urlsplit(args.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        print(
            f"orspec: --base-url must be an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1, not {args.base_url!r}",
            file=sys.stderr,
        )
        return 2
    filters = args.filter.split(",") if args.filter else None
    try:
        select(filters)
    except ValueError as exc:
        print(f"orspec: {exc}", file=sys.stderr)
        return 2

    if not _wait(args.base_url, args.wait):  # one line, not a failure per test, when nothing listens there
        within = f" within {args.wait:g}s" if args.wait else ""
        print(
            f"orspec: no server answered at {args.base_url}{within}; start it, or wait for it with --wait SECONDS",
            file=sys.stderr,
        )
        return 1

    def show(result) -> None:
        if not args.json:
            print(result.line(), flush=True)

    results = run(args.base_url, key, model=args.model, filters=filters, timeout=args.timeout, on_result=show)
    failed = sum(not r.ok for r in results)
    skipped = sum(r.skipped for r in results)
    if args.json:
        document = {
            "base_url": args.base_url,
            "passed": len(results) - failed - skipped,
            "failed": failed,
            "skipped": skipped,
            "results": [r.as_json() for r in results],
        }
        print(json.dumps(document, indent=2))
    else:
        counts = f"{len(results) - failed - skipped} passed, {failed} failed"
        print(
            counts + (f", {skipped} skipped (operations the server does not serve)" if skipped else ""), file=sys.stderr
        )
    return 1 if failed else 0


def _wait(base_url: str, seconds: float) -> bool:
    """True once anything answers HTTP at `base_url` (any status), False after `seconds`."""
    import time

    import httpx

    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(base_url.rstrip("/") + "/responses", timeout=2)
            return True
        except httpx.TransportError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
