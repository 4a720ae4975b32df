"""The `orspec proxy` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..serve import add_limit_arguments, ca_bundle  # neither imports the runtime: `orspec --help` stays quick
from .config import DEFAULT_MAX_CHECKED_REQUEST


def _bytes(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of bytes")
    return int(value)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "proxy",
        help="a byte-transparent reverse proxy that checks real traffic against the spec",
        description="Forward /v1/responses traffic (JSON, SSE, WebSocket) to an upstream server unchanged, "
        "check it on the side against the models and state machines, and record a summary of each exchange.",
    )
    p.add_argument("--upstream", required=True, metavar="URL", help="the server to forward to, with or without /v1")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default: 8080)")
    p.add_argument("--record", type=Path, metavar="DIR", help="write one JSON line per exchange into DIR")
    p.add_argument(
        "--record-bodies",
        action="store_true",
        help="also record request bodies and JSON answers (credentials are still never recorded)",
    )
    p.add_argument(
        "--tool-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="end a stream whose function call arguments get no delta nor .done for S seconds (default: 30)",
    )
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="end a stream with no event for S seconds (default: 60)",
    )
    p.add_argument(
        "--upstream-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="answer 504 when the upstream sends no response headers within S seconds (default: 60)",
    )
    p.add_argument(
        "--upstream-ca-file",
        type=ca_bundle,
        metavar="PEM",
        help="trust an https upstream's certificate if one of these CA certificates signed it (a PEM bundle,"
        " e.g. a private CA's), instead of the system's authorities; $SSL_CERT_FILE works too",
    )
    p.add_argument(
        "--enforce",
        action="store_true",
        help="refuse what a strict server (orspec serve --strict) refuses, with its status and error object, "
        "instead of forwarding it; without it, requests are checked as a tolerant server does",
    )
    p.add_argument(
        "--max-checked-request",
        type=_bytes,
        default=DEFAULT_MAX_CHECKED_REQUEST,
        metavar="BYTES",
        help="forward a request body (or WebSocket turn) larger than BYTES as it arrives, unchecked, and say so in"
        f" its record: checking holds tens of times a body's size in memory (default: {DEFAULT_MAX_CHECKED_REQUEST:,},"
        " 8 MiB)",
    )
    p.add_argument("--quiet", action="store_true", help="no line per exchange on the console; only the summary at exit")
    # The client side is served as `orspec serve` is: the same timeouts, connection cap and shutdown deadline.
    add_limit_arguments(p)
    p.set_defaults(run=cmd_proxy)


def cmd_proxy(args: argparse.Namespace) -> int:
    from openresponses_runtime.server.serving import serve

    from ..listening import listen
    from ..serve import limits_from
    from ..usage import UsageError
    from .app import ProxyApp, ProxyConfig
    from .recorder import Recorder

    for name in ("tool_timeout", "stall_timeout", "upstream_timeout"):
        if getattr(args, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be more than 0 seconds")
    config = ProxyConfig(
        upstream=args.upstream,
        tool_timeout=args.tool_timeout,
        stall_timeout=args.stall_timeout,
        upstream_timeout=args.upstream_timeout,
        upstream_ca_file=args.upstream_ca_file,
        enforce=args.enforce,
        max_checked_request=args.max_checked_request,
    )
    with listen(args.host, args.port) as sock:  # before the record file, so a busy port leaves nothing behind
        try:
            recorder = Recorder(args.record, bodies=args.record_bodies, console=None if args.quiet else sys.stderr)
        except OSError as exc:
            raise UsageError(f"cannot record into {args.record}: {exc.strerror}; pass a folder you may write") from None
        try:
            app = ProxyApp(config, recorder)
        except ValueError as exc:  # the upstream is no URL: nothing to record
            recorder.close()
            if recorder.path:
                recorder.path.unlink()
            raise UsageError(str(exc)) from None
        port = sock.getsockname()[1]
        print(
            f"orspec: proxying http://{args.host}:{port}/v1/responses -> {args.upstream}"
            + (f"; recording into {recorder.path}" if recorder.path else ""),
            file=sys.stderr,
            flush=True,
        )
        try:
            # No `server` or `date` header of uvicorn's own: the client sees the upstream's.
            serve(app, sock=sock, limits=limits_from(args), server_header=False, date_header=False)
        finally:
            recorder.close()
            print("orspec proxy summary:\n" + recorder.summary(), file=sys.stderr)
    return 0
