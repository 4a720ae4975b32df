"""Running an app on uvicorn with the limits a server facing real clients needs, shared by
`orspec serve` and scaffolded providers (`add_arguments` gives both the same options).

HTTP/1.1 is parsed by httptools (C), not h11 (pure Python): measured with `bench/http_layer_bench.py`,
it costs about a third less server CPU per request.

What uvicorn has is used as it is: the keep-alive idle timeout (`timeout_keep_alive`) and the
maximum of concurrent connections (`limit_concurrency`, a 503 beyond it). The cap on streams
(`--max-streams`) is the app's (`create_app(max_streams=...)`, see `streams`): its option is
declared here, beside the others, for the caller to pass on. What uvicorn lacks is added here:

- a silent connection (no byte at all) is closed after `idle_timeout`;
- a request's headers must arrive within `header_timeout` of its first byte (header trickle);
- its body within `body_timeout` of its headers (slowloris);
- running out of file descriptors is logged once a minute, not once per failed `accept()`;
- the writes of one turn of the event loop leave in one send (`TurnWrites`): a response's head
  with its body, a burst of events together; uvicorn writes each apart, and with TCP_NODELAY each
  write is a segment and a system call of its own;
- on SIGTERM or Ctrl-C it stops accepting and lets responses finish until `graceful_timeout`,
  then ends each the spec's way (`shutdown.end_responses`) and exits 0; a second signal ends
  them at once;
- with `workers`, each worker (a replacement for one that died included) shuts down so when its
  supervisor dies without a word (SIGKILL, the OOM killer), rather than serve on as an orphan.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors.multiprocess import Multiprocess, Process

from .shutdown import end_responses
from .streams import DEFAULT_MAX_STREAMS

__all__ = [
    "Limits",
    "TurnWrites",
    "add_arguments",
    "count",
    "limits_from",
    "no_delay",
    "seconds",
    "serve",
    "stream_cap",
]

log = logging.getLogger("openresponses_runtime.server.serving")


@dataclass(frozen=True)
class Limits:
    """Timeouts (seconds) and limits on the way in; each has an option of the same name."""

    idle_timeout: float = 10.0  # a new connection that sends nothing
    header_timeout: float = 10.0  # from a request's first byte to the end of its headers
    body_timeout: float = 30.0  # from the end of the headers to the end of the body
    keep_alive_timeout: float = 5.0  # an idle connection between requests (uvicorn's timeout_keep_alive)
    max_connections: int = 1000  # open at once; a request beyond them gets a 503 (uvicorn's limit_concurrency)
    graceful_timeout: float = 30.0  # on SIGTERM, how long responses under way may go on


_HELP = {
    "idle_timeout": "seconds a new connection may stay silent before it is closed",
    "header_timeout": "seconds from a request's first byte to the end of its headers",
    "body_timeout": "seconds from the end of a request's headers to the end of its body",
    "keep_alive_timeout": "seconds an idle connection is kept open between requests",
    "max_connections": "connections open at once; a request beyond them is answered 503",
    "graceful_timeout": "on SIGTERM or Ctrl-C, seconds responses under way may go on before they end failed"
    " (server_shutting_down); a second signal ends them at once",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--idle-timeout`, `--header-timeout`, ..., each with its default from `Limits`, and
    `--max-streams` (`args.max_streams`, for `create_app`)."""
    for name, default in vars(Limits()).items():
        kind = count if isinstance(default, int) else seconds
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=kind, default=default, help=f"{_HELP[name]} (default: {default:g})")
    parser.add_argument(
        "--max-streams",
        type=stream_cap,
        default=DEFAULT_MAX_STREAMS,
        help="streams generated at once (stream: true, WebSocket turns, background runs); one more is answered"
        f" 503 too_many_streams before it begins; 0: no cap (default: {DEFAULT_MAX_STREAMS})",
    )


def limits_from(args: argparse.Namespace) -> Limits:
    return Limits(**{name: getattr(args, name) for name in vars(Limits())})


def seconds(value: str) -> float:
    """An argparse type: a positive number of seconds."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of seconds")
    return seconds


def count(value: str) -> int:
    """An argparse type: a whole number from 1 up."""
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number from 1 up")
    return int(value)


def stream_cap(value: str) -> int:
    """An argparse type: a whole number of streams, 0 for no cap."""
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number (0: no cap)")
    return int(value)


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Send each write at once (TCP_NODELAY) on a TCP connection.

    asyncio does this itself only for a listening socket made with `proto=IPPROTO_TCP`, which
    uvicorn's own `bind_socket` (the workers' socket) and a socket a caller passes in need not be.
    Without it Nagle's algorithm holds a response's second write until the client's delayed ACK:
    about 40 ms on every response.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class TurnWrites:
    """A transport that sends the writes made in one turn of the event loop together.

    uvicorn writes a response's head and its body apart, and a stream's events one by one; with
    TCP_NODELAY each write is a segment and a system call of its own. Here the first two writes of
    a turn leave at once in one send (a response's head and its first body bytes: a JSON answer
    whole, a stream's first event), and the turn's later writes wait until it ends, or until
    `limit` bytes wait (a burst of events in a few large sends). Nothing waits past the turn it
    was written in: an event a provider yields after awaiting its model goes out at once.
    Everything else is the wrapped transport's.
    """

    limit = 64 * 1024  # a burst of events goes out in sends of about this size

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self.transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._size = 0
        self._flush_due = False  # one end-of-turn flush scheduled, however many writes wait for it
        self._pair_due = True  # the turn's first two writes not sent yet

    def write(self, data: bytes) -> None:
        if not data:
            return
        self._held.append(data)
        self._size += len(data)
        if self._size >= self.limit or (self._pair_due and len(self._held) == 2):
            self._pair_due = False
            self.flush()
        elif not self._flush_due:
            self._flush_due = True
            self._loop.call_soon(self._turn_ended)

    def _turn_ended(self) -> None:
        self._flush_due = False
        self._pair_due = True
        self.flush()

    def flush(self) -> None:
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held, self._size = [], 0
        if not self.transport.is_closing():  # the client left during the turn: nothing to send it
            self.transport.write(data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self._held, self._size = [], 0
        self.transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _TimedHttpTools(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol on httptools with a deadline on each part of a request on its way
    in, and the writes of one turn of the loop sent together."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        no_delay(transport)
        super().connection_made(TurnWrites(transport, asyncio.get_running_loop()))  # type: ignore[arg-type]
        self.limits: Limits = getattr(self.config, "limits", Limits())
        self._reading: str | None = None
        self._due = 0.0  # the loop's time by which the part being read must be in
        self._deadline: asyncio.TimerHandle | None = None
        self._arm("idle", self.limits.idle_timeout)

    def data_received(self, data: bytes) -> None:
        if self._reading in (None, "idle"):  # the first byte of a request
            self._arm("headers", self.limits.header_timeout)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._arm("body", self.limits.body_timeout)  # until on_message_complete: at once without a body
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()  # the request is in: the app has it
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self._disarm()  # between requests, uvicorn's keep-alive timeout applies
        super().on_response_complete()

    def handle_websocket_upgrade(self) -> None:
        self._stop_timer()  # the WebSocket protocol takes the connection, and its own timeouts
        self.transport.flush()
        self.transport = self.transport.transport  # the socket's own transport, not the turn's writes
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    # One timer per connection, not one per part of every request: a part that ends before its
    # deadline leaves the timer as it is, and the timer, when it fires, waits on for the deadline
    # of the part being read then (if any) before it closes the connection.
    def _arm(self, reading: str, seconds: float) -> None:
        self._reading = reading
        self._due = due = self.loop.time() + seconds
        if self._deadline is not None and self._deadline.when() > due:
            self._deadline.cancel()
            self._deadline = None
        if self._deadline is None:
            self._deadline = self.loop.call_at(due, self._check)

    def _disarm(self) -> None:
        self._reading = None  # the timer stays: it finds nothing being read when it fires

    def _stop_timer(self) -> None:
        self._reading = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _check(self) -> None:
        self._deadline = None
        if self._reading is None:
            return
        if self.loop.time() < self._due:  # another part began since the timer was set: its own deadline
            self._deadline = self.loop.call_at(self._due, self._check)
            return
        log.info("closed a connection: its request's %s did not arrive in time", self._reading)
        self._reading = None
        self.transport.close()


class _Server(uvicorn.Server):
    """uvicorn's server, with a deadline on shutdown and a quiet log when file descriptors run out."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.graceful_timeout = getattr(config, "limits", Limits()).graceful_timeout
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_quiet_accept_failures())
        with self.capture_signals():
            await self._serve(sockets)
            self._captured_signals.clear()  # the shutdown asked for is done: exit 0, not killed by the signal again

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        # What import and startup made lives as long as the server: out of the collector's sight, a
        # full collection walks only what requests made (and, across a fork, pages stay shared).
        gc.collect()
        gc.freeze()

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self._loop is None:
            return super().handle_exit(sig, frame)
        if self.should_exit:  # a second signal: end the responses now, still the spec's way
            self._loop.call_soon_threadsafe(end_responses)
            return None
        super().handle_exit(sig, frame)
        self._loop.call_soon_threadsafe(self._loop.call_later, self.graceful_timeout, end_responses)
        return None


def _quiet_accept_failures() -> Any:
    """An event loop exception handler that logs `accept()` failing for lack of file descriptors
    once a minute (asyncio retries every second, and logs each), and everything else as asyncio would."""
    last = -60.0

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        nonlocal last
        if not context.get("message", "").startswith("socket.accept() out of system resource"):
            loop.default_exception_handler(context)
            return
        now = time.monotonic()
        if now - last >= 60:
            last = now
            log.error(
                "cannot accept connections: out of file descriptors (%s); raise the limit (ulimit -n)"
                " or lower --max-connections; said once a minute",
                context.get("exception"),
            )

    return handle


def serve(
    app: Any,
    *,
    sock: socket.socket | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: Limits = Limits(),
    workers: int = 1,
    **options: Any,
) -> None:
    """Run `app` on uvicorn (on `sock`, else on `host`:`port`) with `limits`, until SIGTERM or Ctrl-C
    and the shutdown after it. With `workers` above 1, `app` is an import string (`module:name`), and
    each worker process runs its own server on the shared socket. `options` are uvicorn's."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=_TimedHttpTools,
        timeout_keep_alive=limits.keep_alive_timeout,
        limit_concurrency=limits.max_connections,
        # uvicorn cancels what still runs this long after the responses were ended: a provider stuck before its first step.
        timeout_graceful_shutdown=limits.graceful_timeout + 5,
        workers=workers,
        **{"log_level": "warning", **options},
    )
    config.limits = limits  # type: ignore[attr-defined]  # read by each connection, in every worker
    if workers == 1:
        _Server(config).run(sockets=None if sock is None else [sock])
    else:  # the parent passes SIGTERM on to each worker, which shuts down with its deadline, and waits for them
        _Workers(config, sockets=[sock or config.bind_socket()]).run()


class _Worker(Process):
    """uvicorn's worker process, running this module's server, and following its parent: when the
    supervisor dies (SIGKILL, the OOM killer), the worker shuts down as on SIGTERM, closing the
    listening socket, instead of serving on as an orphan."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket]):
        super().__init__(config, sockets)
        self.parent = os.getpid()  # the supervisor's, pickled with the worker's target

    def target(self, sockets: list[socket.socket] | None = None) -> None:  # pragma: no cover  (in the worker)
        follow_parent(self.parent, stopping=lambda: self.server.should_exit)
        super().target(sockets)

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            self._server = _Server(self.config)
        return self._server


def follow_parent(parent: int, *, every: float = 0.5, stopping: Any = lambda: False) -> None:
    """SIGTERM this process when `parent` is no longer its parent: at once on Linux (the kernel's
    parent-death signal, `prctl(PR_SET_PDEATHSIG)`), and on every system within `every` seconds (a
    thread that watches the parent's pid, as gunicorn's workers do; it also covers a parent-death
    signal lost because the parent died before it was set). The watch sends nothing once `stopping()`
    is true: a second SIGTERM would end the responses under way at once, not at the graceful deadline."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        if not stopping():
            log.warning("the supervisor (pid %d) is gone; this worker shuts down", parent)
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="orspec-parent-watch", daemon=True).start()


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class _Workers(Multiprocess):
    """uvicorn's supervisor, starting this module's workers, replacements included: uvicorn's own
    `keep_subprocess_alive` and `restart_all` name its plain `Process`, which is swapped for
    `_Worker` while they run (in the supervisor's one thread)."""

    def init_processes(self) -> None:
        for _ in range(self.processes_num):
            process = _Worker(self.config, self.sockets)
            process.start()
            self.processes.append(process)

    def keep_subprocess_alive(self) -> None:
        with _workers_replaced_by_ours():
            super().keep_subprocess_alive()

    def restart_all(self) -> None:
        with _workers_replaced_by_ours():
            super().restart_all()


@contextlib.contextmanager
def _workers_replaced_by_ours() -> Any:
    from uvicorn.supervisors import multiprocess

    multiprocess.Process = _Worker  # type: ignore[misc]
    try:
        yield
    finally:
        multiprocess.Process = Process  # type: ignore[misc]
