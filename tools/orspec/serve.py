"""`orspec serve`: the generated server on uvicorn, with the built-in demo model, or as a gateway in
front of another model API (`--gateway NAME --upstream URL`, the runtime's gateways by the names of
its registry).

It never runs open: without `--api-key` or `$ORSPEC_API_KEY` it makes up a random key and prints it.
A gateway's upstream key comes only from the environment: `$ORSPEC_UPSTREAM_API_KEY`, else the
provider's usual variable (`$OPENAI_API_KEY`, `$ANTHROPIC_API_KEY`, `$GEMINI_API_KEY`); a flag
would show it in the process list. Models pass through, or `--model REQUESTED=UPSTREAM` renames one
(repeatable), or `--model UPSTREAM` sends every request to one. `--thinking-budget EFFORT=TOKENS` and
`--thinking-level EFFORT=LEVEL` (repeatable) override rows of the tables by which the Anthropic and
Gemini gateways turn `reasoning.effort` into thinking.
Reasoning items that clients carry are sealed with `--reasoning-key` (or `$ORSPEC_REASONING_KEY`),
else with a random key that dies with the process.
With the runtime's `observability` extra installed (orspec depends on it), it also serves
`/metrics`, `/healthz` and `/readyz`, and gives each request an id, an access record and a trace
span; `--log-format json` writes the server's records, one per request among them, as JSON lines,
and every other line it writes too: its own two, uvicorn's and any other library's.

With `--workers`, each worker process gets its settings, keys included, with its app factory
(`functools.partial(worker_app, settings)`): multiprocessing's spawn pickles the factory, with
uvicorn's config, onto the private pipe it starts each child with. No key goes through a
worker's environment (/proc/PID/environ: any process of the same user reads it) or command line
(every user reads it), nor into a file, however briefly; and `$ORSPEC_API_KEY`,
`$ORSPEC_REASONING_KEY`, `$ORSPEC_METRICS_KEY` and `$ORSPEC_TENANT_SECRET` are taken out of the
environment the workers inherit.

`/metrics` names the tenants and counts their requests, so it is served only with its own key
(`--metrics-key`, or `$ORSPEC_METRICS_KEY`), never with a client's.
"""

from __future__ import annotations

import argparse
import base64
import functools
import logging
import os
import runpy
import secrets
import sys
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="run the Open Responses server with the built-in demo model, or as a gateway to another model API"
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    p.add_argument(
        "--gateway",
        metavar="NAME",
        help=f"serve in front of another model API instead of the demo model: {' | '.join(_gateway_names())}",
    )
    p.add_argument(
        "--upstream",
        metavar="URL",
        help="with --gateway: the upstream API root, as its SDK takes it (e.g. http://127.0.0.1:11434/v1 for"
        " Ollama); default: the provider's public API (chat-completions has none). The upstream key comes from"
        f" ${_registry()['UPSTREAM_KEY_VARIABLE']}, else the provider's usual variable"
        f" ({', '.join('$' + g.key_variable for g in _registry()['GATEWAYS'].values())}), never from a flag",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="REQUESTED=UPSTREAM",
        help="with --gateway: send requests for model REQUESTED to the upstream's model UPSTREAM (repeatable);"
        " a bare UPSTREAM sends every request to it; models not named pass through",
    )
    p.add_argument(
        "--server-tool",
        action="append",
        default=[],
        metavar="TYPE",
        help="with --gateway anthropic-messages: an Anthropic server tool type clients may turn on with an"
        " anthropic:server_tool tool, e.g. web_search_20250305 (repeatable); it runs on the upstream key, so none"
        " is allowed by default and any other is refused",
    )
    thinking_gateways = " or ".join(name for name, g in _registry()["GATEWAYS"].items() if g.thinking_tables)
    p.add_argument(
        "--thinking-budget",
        action="append",
        default=[],
        metavar="EFFORT=TOKENS",
        help=f"with --gateway {thinking_gateways}: the thinking budget a reasoning.effort asks for, over the"
        " gateway's table (repeatable), e.g. low=2048; Anthropic takes at least 1024, Gemini 2.5 0 or more"
        " (-1: the model decides)",
    )
    p.add_argument(
        "--thinking-level",
        action="append",
        default=[],
        metavar="EFFORT=LEVEL",
        help=f"with --gateway {thinking_gateways}: the thinking level a reasoning.effort asks for of a model"
        " that takes levels (Anthropic's adaptive thinking: output_config.effort; Gemini 3: thinkingLevel),"
        " over the gateway's table (repeatable), e.g. xhigh=high",
    )
    p.add_argument(
        "--upstream-timeout",
        type=_seconds,
        default=argparse.SUPPRESS,
        help="with --gateway: seconds the upstream may take to connect, and between reads of its answer"
        " (default: 120 for chat-completions, 600 for the others)",
    )
    p.add_argument(
        "--upstream-ca-file",
        type=ca_bundle,
        metavar="PEM",
        help="with --gateway: trust an https upstream's certificate if one of these CA certificates signed it"
        " (a PEM bundle, e.g. a private CA's), instead of the system's authorities; $SSL_CERT_FILE works too",
    )
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    p.add_argument("--api-key", help="the bearer token clients must send (default: $ORSPEC_API_KEY, else a random one)")
    p.add_argument(
        "--metrics-key",
        type=_secret,
        help="the bearer token /metrics asks for (default: $ORSPEC_METRICS_KEY); without one /metrics is not"
        " served: it names the tenants and counts their requests",
    )
    p.add_argument(
        "--api-keys-file",
        metavar="FILE",
        help="bearer tokens, one a line: `KEY` or `TENANT KEY` (lines starting with # are comments; any other"
        " ambiguous line is an error); each key a tenant whose responses, runs and sealed reasoning no other key"
        " reaches; logs and metrics name the tenant, never the key; not with --api-key",
    )
    p.add_argument(
        "--store",
        help="memory:, a SQLite file path or a postgresql:// URL (default: $ORSPEC_STORE, else orspec-responses.sqlite3)",
    )
    p.add_argument(
        "--store-timeout",
        type=_seconds,
        default=5.0,
        help="seconds before a store that does not answer is unavailable (a 503): SQLite's busy timeout,"
        " PostgreSQL's connect, statement and pool-wait timeouts (default: 5)",
    )
    p.add_argument(
        "--store-sync",
        choices=("normal", "full"),
        default="normal",
        help="a SQLite store's durability: normal, a response survives the server crashing or being killed, and a"
        " power cut or OS crash may lose the last few; full, every response is synced to the disk before it is"
        " answered, surviving a power cut too, for a disk sync each (default: normal; PostgreSQL syncs as its"
        " server is set)",
    )
    p.add_argument(
        "--pool-size",
        type=_count,
        default=10,
        help="PostgreSQL connections per process; keep it times the processes under max_connections (default: 10)",
    )
    p.add_argument(
        "--workers",
        type=_count,
        default=1,
        help="worker processes sharing the port (uvicorn's workers); each has its own store pool, so a SQLite"
        " file or a postgresql:// store, not memory: (default: 1)",
    )
    p.add_argument(
        "--delay", type=float, default=0.02, help="the demo model's seconds between streamed chunks (default: 0.02)"
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="check every emitted stream against the state machines, and log the server's debug records"
        " (a store failure's traceback, one a minute)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse (400) parameters and tool types the spec does not define, instead of ignoring and reporting them",
    )
    p.add_argument(
        "--reasoning-key",
        type=_secret,
        help="the key that seals reasoning items clients carry (include: reasoning.encrypted_content); default: "
        "$ORSPEC_REASONING_KEY, else a random key, so that items do not outlive the process",
    )
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text: warnings and errors only (default); json: one JSON object a line, one per request among them",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        metavar="ORIGIN",
        help="let pages from ORIGIN (e.g. http://127.0.0.1:8000, a docs site's console) call the server from a"
        " browser: CORS headers for that origin only; repeatable; off by default",
    )
    add_limit_arguments(p)
    p.add_argument(
        "--max-streams",
        type=_streams,
        default=100,  # the runtime's `streams.DEFAULT_MAX_STREAMS`
        help="streams generated at once (stream: true, WebSocket turns, background runs); one more is answered"
        " 503 too_many_streams before it begins; 0: no cap (default: 100)",
    )
    p.add_argument(
        "--max-streams-per-tenant",
        type=_count_or_none,
        default=None,
        help="of those, the most one API key may hold, so that one key cannot take every slot (default: all of"
        " them with one key, half with more)",
    )
    p.add_argument(
        "--max-pending",
        type=_count_or_none,
        default=64,  # the runtime's `streams.DEFAULT_MAX_PENDING`
        help="non-streamed creates answered at once, each a whole response in memory; one more is answered"
        " 503 server_busy with Retry-After; 0: no cap (default: 64)",
    )
    p.add_argument(
        "--max-pending-per-tenant",
        type=_count_or_none,
        default=None,
        help="of those, the most one API key may hold, so that one key's creates cannot keep the others out"
        " (default: all of them with one key, half with more)",
    )
    # What one request may ask (the runtime's `bounds.Bounds` and `create_app(max_body_bytes=...)`), with
    # their defaults repeated in the help: `orspec` starts without importing the runtime.
    p.add_argument(
        "--max-body-bytes",
        type=_count,
        default=None,
        help="bytes of a request body; a larger one is answered 413 (default: 16777216)",
    )
    for flag, default, what in _BOUNDS:
        p.add_argument(flag, type=_count_or_none, default=None, help=f"{what}; 0: no bound (default: {default})")
    p.add_argument(
        "--retention",
        type=_seconds,
        default=None,
        help="seconds stored responses and background runs' events are kept, swept in the background"
        " (default: kept until deleted)",
    )
    p.set_defaults(run=cmd_serve)


_BOUNDS = [
    ("--max-input-items", "10000", "items in one request's input; more is a 400 too_many_items (param input)"),
    ("--max-tools", "512", "tools offered in one request; more is a 400 too_many_tools (param tools)"),
    (
        "--max-context-bytes",
        "16777216",
        "bytes of stored conversation a previous_response_id may load; more is a 400 context_too_large",
    ),
]


def _bounds(settings: dict[str, Any]) -> dict[str, Any]:
    """`create_app`'s keywords for the bounds given on the command line (0 lifts one); the rest keep the
    runtime's defaults."""
    from openresponses_runtime.server.bounds import Bounds

    given = {name: settings.get(name) for name in ("max_input_items", "max_tools", "max_context_bytes")}
    options: dict[str, Any] = {}
    if any(value is not None for value in given.values()):
        options["bounds"] = Bounds(**{k: (v or None) for k, v in given.items() if v is not None})
    if settings.get("max_body_bytes") is not None:
        options["max_body_bytes"] = settings["max_body_bytes"]
    return options


def _count_or_none(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 0:
        raise argparse.ArgumentTypeError("it must be 0 (no cap) or more")
    return number


def _runtime_type(name: str) -> Any:
    """The runtime's argparse type `name` (from `serving`, which scaffolded providers share), imported
    when an option is read, not when `orspec` starts: the runtime's server is a heavy import."""

    def parse(value: str) -> Any:
        from openresponses_runtime.server import serving

        return getattr(serving, name)(value)

    parse.__name__ = name
    return parse


_seconds, _count, _streams = _runtime_type("seconds"), _runtime_type("count"), _runtime_type("stream_cap")


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """The runtime's `serving.Limits` as options (`orspec serve` and `orspec proxy` share them), declared
    here so that `orspec` starts without importing the runtime."""
    for flag, kind, help in _LIMITS:
        parser.add_argument(flag, type=kind, default=argparse.SUPPRESS, help=help)


def limits_from(args: argparse.Namespace) -> Any:
    """The `serving.Limits` the options of `add_limit_arguments` give; the runtime's default for each not given."""
    from openresponses_runtime.server.serving import Limits

    return Limits(**{name: value for name, value in vars(args).items() if name in Limits.__dataclass_fields__})


_LIMITS = [
    ("--idle-timeout", _seconds, "seconds a new connection may stay silent before it is closed (default: 10)"),
    ("--header-timeout", _seconds, "seconds from a request's first byte to the end of its headers (default: 10)"),
    ("--body-timeout", _seconds, "seconds from the end of a request's headers to the end of its body (default: 30)"),
    ("--keep-alive-timeout", _seconds, "seconds an idle connection is kept open between requests (default: 5)"),
    ("--max-connections", _count, "connections open at once; a request beyond them is answered 503 (default: 1000)"),
    (
        "--graceful-timeout",
        _seconds,
        "on SIGTERM or Ctrl-C, seconds responses under way may go on before they end failed"
        " (server_shutting_down); a second signal ends them at once (default: 30)",
    ),
]


def _secret(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("it is empty: give a long random string")
    return value


def ca_bundle(value: str) -> str:
    """A PEM bundle of CA certificates an https upstream is checked against, read now: a file that is
    missing or holds no certificate is a usage error at start, not a failed turn later."""
    import ssl

    try:
        ssl.create_default_context(cafile=value)
    except ssl.SSLError:
        raise argparse.ArgumentTypeError(f"{value} holds no PEM CA certificate") from None
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {value}: {exc.strerror or exc}") from None
    return value


def cmd_serve(args: argparse.Namespace) -> int:
    from .usage import UsageError

    try:
        return _serve(args)
    except UsageError as exc:
        if args.log_format != "json":
            raise
        _say(args.log_format, str(exc), level=logging.ERROR)  # what `orspec: ...` says, as a JSON line
        return 2


def _serve(args: argparse.Namespace) -> int:
    from openresponses_runtime.server import StoreError
    from openresponses_runtime.server.serving import serve

    from .listening import listen
    from .usage import UsageError

    if args.api_key and args.api_keys_file:
        raise UsageError("--api-key and --api-keys-file: give one (a keys file holds unnamed keys too)")
    given = args.api_key or os.environ.get(_API_KEY_ENV)
    keys: list[Any] = [given] if given else []
    if args.api_keys_file:
        from openresponses_runtime.server import read_keys_file

        if given:  # the file says who may call; a key from the environment beside it would be one more, unseen
            keys = []
            _say(args.log_format, f"${_API_KEY_ENV} is set but not accepted: --api-keys-file gives the keys")
        try:
            keys += read_keys_file(args.api_keys_file)
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read --api-keys-file {args.api_keys_file}: {exc}") from None
        except ValueError as exc:
            raise UsageError(f"--api-keys-file: {exc}") from None
        if not keys:
            raise UsageError(f"--api-keys-file {args.api_keys_file} holds no key")
    settings = {
        "gateway": _gateway_settings(args, UsageError),
        "key": keys or "sk-orspec-" + secrets.token_urlsafe(24),
        "store": args.store or os.environ.get("ORSPEC_STORE"),
        **{
            name: getattr(args, name)
            for name in (
                "store_timeout",
                "store_sync",
                "pool_size",
                "delay",
                "debug",
                "strict",
                "log_format",
                "max_streams",
                "cors_origin",
                "max_streams_per_tenant",
                "max_pending",
                "max_pending_per_tenant",
                "retention",
                "max_body_bytes",
                "max_input_items",
                "max_tools",
                "max_context_bytes",
            )
        },
        "reasoning_key": args.reasoning_key,
        "metrics_key": args.metrics_key or os.environ.get(_METRICS_KEY_ENV),
        "tenant_secret": os.environ.get(_TENANT_SECRET_ENV),
    }
    if args.workers > 1:
        if settings["store"] in ("memory", "memory:", ":memory:"):
            raise UsageError(
                "--store memory: lives in one process; with --workers use a SQLite file or a postgresql:// URL"
            )
        # Every worker seals reasoning items with the same key, so that any of them opens what another sealed.
        settings["reasoning_key"] = args.reasoning_key or os.environ.get(_REASONING_ENV) or secrets.token_urlsafe(32)
        for name in _SECRET_ENVS:  # the workers get the keys with their factory, not inherited
            os.environ.pop(name, None)
    try:
        app = _app(settings)  # in the workers' parent too: a store that cannot be opened is said once, here
    except StoreError as exc:
        raise UsageError(f"{exc}, or pass another with --store") from None
    except (_GatewayError, ValueError) as exc:  # ValueError: a package that cannot serve (see create_app)
        raise UsageError(str(exc)) from None
    limits = limits_from(args)
    uvicorn = {"log_config": _json_log_config()} if args.log_format == "json" else {}
    with listen(args.host, args.port) as sock:  # said only once it is true, and nothing said if it cannot be
        if not keys:
            _say(
                args.log_format,
                f"no --api-key or $ORSPEC_API_KEY given; clients must send: Authorization: Bearer {settings['key']}",
                stream=sys.stdout,
            )
        port = sock.getsockname()[1]
        front = f" in front of {_public(settings['gateway']['upstream'])}" if settings["gateway"] else ""
        _say(args.log_format, f"serving Open Responses on http://{args.host}:{port}/v1/responses{front}")
        if args.workers > 1:
            # Each worker builds its app from the settings pickled with this factory (see the module's docstring).
            factory = functools.partial(worker_app, settings)
            serve(factory, sock=sock, limits=limits, workers=args.workers, factory=True, **uvicorn)
        else:
            serve(app, sock=sock, limits=limits, **uvicorn)
    return 0


def _public(url: str) -> str:
    """`url` as a log line may show it: without the credentials or the query it may carry."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


_API_KEY_ENV = "ORSPEC_API_KEY"
_REASONING_ENV = "ORSPEC_REASONING_KEY"
_METRICS_KEY_ENV = "ORSPEC_METRICS_KEY"
_TENANT_SECRET_ENV = "ORSPEC_TENANT_SECRET"
_SECRET_ENVS = (_API_KEY_ENV, _REASONING_ENV, _METRICS_KEY_ENV, _TENANT_SECRET_ENV)


def worker_app(settings: dict[str, Any]) -> Any:
    """The app of one `--workers` process, as its parent configured it."""
    return _app(settings)


def _say(log_format: str, message: str, *, stream: Any = None, level: int = logging.INFO) -> None:
    """One line of `orspec serve`'s own: `orspec: message`, or with `json` a record as the server's are."""
    stream = stream or sys.stderr
    if log_format == "json":
        from openresponses_runtime.server.observability import JSONFormatter

        fields = {"name": "orspec.serve", "msg": message, "levelno": level, "levelname": logging.getLevelName(level)}
        line = JSONFormatter().format(logging.makeLogRecord(fields))
    else:
        line = f"orspec: {message}"
    print(line, file=stream, flush=True)


_JSON_FORMATTER = "openresponses_runtime.server.observability.JSONFormatter"


def _json_log_config() -> dict[str, Any]:
    """uvicorn's loggers (`uvicorn.run`'s own configuration, with the runtime's JSON lines)."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": _JSON_FORMATTER}},
        "handlers": {"json": handler},
        "loggers": {
            "uvicorn": {"handlers": ["json"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": ["json"], "level": "INFO", "propagate": False},
        },
    }


def _log_the_rest_as_json() -> None:
    """Any other library's records (asyncio's, Python's warnings), which would otherwise reach
    stderr as bare text through logging's last resort, as JSON lines too."""
    from openresponses_runtime.server.observability import JSONFormatter

    root = logging.getLogger()
    if any(getattr(h, "orspec_json", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter())
    handler.setLevel(logging.WARNING)
    # The runtime's records and uvicorn's have their own handlers; they would come here too.
    handler.addFilter(lambda record: not record.name.startswith(("openresponses_runtime", "uvicorn")))
    handler.orspec_json = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    logging.captureWarnings(True)


def _app(settings: dict[str, Any]) -> Any:
    from openresponses_runtime.server import DemoProvider, Observability, create_app, open_store
    from openresponses_runtime.server.observability import configure_logging, installed

    configure_logging(settings["log_format"], debug=settings["debug"])
    if settings["log_format"] == "json":
        _log_the_rest_as_json()
    gateway = settings["gateway"]
    provider = _gateway_provider(gateway) if gateway else DemoProvider(delay=settings["delay"])
    app = create_app(
        provider,
        store=open_store(
            settings["store"],
            timeout=settings["store_timeout"],
            pool_size=settings["pool_size"],
            sync=settings["store_sync"],
        ),
        api_keys=settings["key"],
        debug=settings["debug"],
        strict=settings["strict"],
        reasoning_key=settings["reasoning_key"],
        observability=installed() and Observability(metrics_key=settings.get("metrics_key")),
        tenant_secret=settings.get("tenant_secret"),
        max_streams=settings["max_streams"],
        max_streams_per_tenant=settings["max_streams_per_tenant"],
        max_pending=settings["max_pending"],
        max_pending_per_tenant=settings.get("max_pending_per_tenant"),
        retention=settings["retention"],
        **_bounds(settings),
    )
    return _with_cors(app, settings.get("cors_origin") or [])


def _with_cors(app: Any, origins: list[str]) -> Any:
    """The app behind CORS headers for `origins` (none: the app itself, so browsers on other origins
    are refused as usual). The key travels as a bearer header, not a cookie, so no credentials mode.
    A page from one of `origins` may also open a WebSocket with its key as a subprotocol (see
    `_WebSocketKey`), since a browser's WebSocket cannot send an `Authorization` header."""
    if not origins:
        return app
    from starlette.middleware.cors import CORSMiddleware

    app = _WebSocketKey(app, origins)
    return CORSMiddleware(
        app,
        allow_origins=origins,
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=["Authorization", "Content-Type", "Accept", "OpenResponses-Version"],
        expose_headers=["OpenResponses-Ignored", "X-Request-Id"],
        max_age=600,
    )


class _WebSocketKey:
    """A browser's WebSocket key, as OpenAI's Realtime API takes it: the page offers the subprotocols
    `openresponses` and `openresponses-key.<the key in unpadded base64url>`; from an allowed origin,
    with no `Authorization` header, the key becomes one (`Bearer <key>`) and leaves the offered
    protocols, and the handshake answers with `openresponses`. Any other connection passes as it is."""

    PROTOCOL = "openresponses"
    KEY_PREFIX = "openresponses-key."

    def __init__(self, app: Any, origins: list[str]):
        self.app = app
        self.origins = {origin.rstrip("/").encode() for origin in origins}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        headers = [(name, value) for name, value in scope["headers"]]
        origin = next((value for name, value in headers if name == b"origin"), b"")
        offered = [
            word.strip()
            for name, value in headers
            if name == b"sec-websocket-protocol"
            for word in value.decode("latin-1").split(",")
        ]
        key = next((word[len(self.KEY_PREFIX) :] for word in offered if word.startswith(self.KEY_PREFIX)), None)
        if key is None or origin.rstrip(b"/") not in self.origins or any(n == b"authorization" for n, _ in headers):
            return await self.app(scope, receive, send)
        try:
            token = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4)).decode()
        except (ValueError, UnicodeDecodeError):
            token = ""  # refused as a missing key would be
        rest = [word for word in offered if not word.startswith(self.KEY_PREFIX)]
        headers = [(n, v) for n, v in headers if n != b"sec-websocket-protocol"]
        headers.append((b"authorization", f"Bearer {token}".encode()))
        if rest:
            headers.append((b"sec-websocket-protocol", ", ".join(rest).encode()))
        scope = {**scope, "headers": headers, "subprotocols": rest}

        async def answer(message: Any) -> None:
            if message["type"] == "websocket.accept" and self.PROTOCOL in rest and not message.get("subprotocol"):
                message = {**message, "subprotocol": self.PROTOCOL}
            await send(message)

        await self.app(scope, receive, answer)


# -- gateways ---------------------------------------------------------------------------------


class _GatewayError(Exception):
    """A gateway that cannot be configured as asked (no key, no upstream): a usage mistake."""


@cache
def _registry() -> dict[str, Any]:
    """The runtime's gateway registry, read from its file: importing the runtime to list three names
    would cost `orspec` two seconds of start-up on every command."""
    spec = find_spec("openresponses_runtime")
    folders = list(spec.submodule_search_locations or ()) if spec else []
    for folder in folders:
        path = Path(folder) / "gateways" / "registry.py"
        if path.is_file():
            return runpy.run_path(str(path), run_name="orspec._gateway_registry")
    return {"GATEWAYS": {}, "UPSTREAM_KEY_VARIABLE": "ORSPEC_UPSTREAM_API_KEY"}


def _gateway_names() -> list[str]:
    return list(_registry()["GATEWAYS"])


def _gateway_settings(args: argparse.Namespace, usage_error: type[Exception]) -> dict[str, Any] | None:
    """What a gateway is built from (its key stays in the environment, where each worker reads it),
    or None for the demo model."""
    gateway_options = (
        ("--upstream", args.upstream),
        ("--model", args.model),
        ("--server-tool", args.server_tool),
        ("--thinking-budget", args.thinking_budget),
        ("--thinking-level", args.thinking_level),
        ("--upstream-ca-file", args.upstream_ca_file),
    )
    if args.gateway is None:
        given = [flag for flag, value in gateway_options if value] + (
            ["--upstream-timeout"] if hasattr(args, "upstream_timeout") else []
        )
        if given:
            raise usage_error(f"{given[0]} needs --gateway NAME ({', '.join(_gateway_names())})")
        return None
    gateways = _registry()["GATEWAYS"]
    if args.gateway not in gateways:
        raise usage_error(f"--gateway {args.gateway}: no such gateway; choose one of {', '.join(gateways)}")
    gateway = gateways[args.gateway]
    upstream = args.upstream or gateway.base_url
    if not upstream:
        raise usage_error(
            f"--gateway {args.gateway} needs --upstream URL: the API root, e.g. https://api.openai.com/v1"
        )
    if not upstream.startswith(("http://", "https://")):
        raise usage_error(f"--upstream {upstream}: not an http:// or https:// URL")
    if args.server_tool and gateway.name != "anthropic-messages":
        raise usage_error(f"--server-tool is for --gateway anthropic-messages, not {gateway.name}")
    if (args.thinking_budget or args.thinking_level) and not gateway.thinking_tables:
        flag = "--thinking-budget" if args.thinking_budget else "--thinking-level"
        takes = " or ".join(name for name, g in gateways.items() if g.thinking_tables)
        raise usage_error(f"{flag} is for --gateway {takes}, not {gateway.name} (which passes reasoning.effort on)")
    model, models = None, {}
    for entry in args.model:
        requested, equals, upstream_model = entry.partition("=")
        if not equals:
            requested, upstream_model = "", entry
        if not upstream_model or (equals and not requested):
            raise usage_error(f"--model {entry}: give REQUESTED=UPSTREAM, or UPSTREAM alone for every request")
        if not equals:
            model = upstream_model
        else:
            models[requested] = upstream_model
    return {
        "name": gateway.name,
        "upstream": upstream,
        "model": model,
        "models": models,
        "timeout": getattr(args, "upstream_timeout", None),
        "ca_file": args.upstream_ca_file,
        "server_tools": list(args.server_tool),
        "thinking_budgets": _effort_rows("--thinking-budget", args.thinking_budget, usage_error, tokens=True),
        "thinking_levels": _effort_rows("--thinking-level", args.thinking_level, usage_error, tokens=False),
    }


def _effort_rows(flag: str, entries: list[str], usage_error: type[Exception], *, tokens: bool) -> dict[str, Any]:
    """`EFFORT=VALUE` entries as rows over a gateway's thinking table (whose provider checks them):
    `tokens`, whole numbers; else names."""
    shape = "EFFORT=TOKENS, TOKENS a whole number, e.g. low=2048" if tokens else "EFFORT=LEVEL, e.g. xhigh=high"
    rows: dict[str, Any] = {}
    for entry in entries:
        effort, _, given = entry.partition("=")
        try:
            if not effort or not given:
                raise ValueError
            rows[effort] = int(given) if tokens else given
        except ValueError:
            raise usage_error(f"{flag} {entry}: give {shape}") from None
    return rows


def _gateway_provider(settings: dict[str, Any]) -> Any:
    """The gateway's provider, its key read from the environment (in each worker too)."""
    from openresponses_runtime.gateways.registry import GATEWAYS, UPSTREAM_KEY_VARIABLE

    gateway = GATEWAYS[settings["name"]]
    key = os.environ.get(UPSTREAM_KEY_VARIABLE) or os.environ.get(gateway.key_variable, "")
    if not key and gateway.base_url:  # a public API: no key, no answer (a local server may need none)
        raise _GatewayError(
            f"--gateway {gateway.name}: set ${UPSTREAM_KEY_VARIABLE} or ${gateway.key_variable}"
            " to the upstream's API key (never a flag: it would show in the process list)"
        )
    options: dict[str, Any] = {"timeout": settings["timeout"]} if settings["timeout"] is not None else {}
    if settings.get("ca_file"):
        options["ca_file"] = settings["ca_file"]
    if settings["server_tools"]:
        options["server_tools"] = settings["server_tools"]
    for table in ("thinking_budgets", "thinking_levels"):
        if settings[table]:
            options[table] = settings[table]
    try:
        return gateway.load()(
            base_url=settings["upstream"], api_key=key, model=settings["model"], models=settings["models"], **options
        )
    except ValueError as exc:
        raise _GatewayError(f"--gateway {gateway.name}: {exc}") from None
