"""One HTTP/1.1 client to an upstream, for `orspec proxy` and the gateways: kept-alive connections in
a pool, TCP_NODELAY, TLS by the standard library's `ssl`, and the answer's body handed on as each
network read brings it.

It does what a byte-transparent proxy needs and no more: the request leaves in one write (head and
a held body together), nothing is added to the caller's headers but `Host` and the body's length,
the body is not decompressed, and a chunked body is unframed. httptools (C, the serving layer's
parser too) reads the answers. A general client (aiohttp) spent about a third of a millisecond more
on each request before its first byte; httpx on h11, most of a gateway's CPU per streamed event.

TLS verifies the upstream's certificate and host name by default, against the system's trusted
authorities, or against `ca_file` (a PEM bundle: a private authority's, say); `verify=False` turns
the check off, for a test upstream only.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import ssl
from collections import deque
from collections.abc import AsyncIterator
from urllib.parse import unquote, urlsplit

import httptools

__all__ = ["Upstream", "UpstreamError", "UpstreamResponse", "tls_context"]

_READ_LIMIT = 256 * 1024  # bytes of an answer held for a slow client before the upstream is not read on


class UpstreamError(Exception):
    """The upstream could not be reached, or its connection broke, or it sent what is not HTTP."""


class _Connection(asyncio.Protocol):
    """One connection to the upstream, reading one answer at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.lost: BaseException | None = None
        self.closed = False
        self._writable: asyncio.Future | None = None
        self._answer: UpstreamResponse | None = None
        self.tunnel: asyncio.StreamWriter | None = None  # the proxy connection this one runs inside, if any

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the request's one write leaves at once

    def data_received(self, data: bytes) -> None:
        if self._answer is None:  # bytes nobody asked for: the connection is not to be used again
            self.closed = True
            self.transport.close()  # type: ignore[union-attr]
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._answer.fail(UpstreamError("the upstream switched protocols on a plain request"))
        except httptools.HttpParserError as exc:
            self.closed = True
            self.transport.close()  # type: ignore[union-attr]
            self._answer.fail(UpstreamError(f"the upstream's answer is not HTTP/1.1 ({exc})"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)  # the body's writer sees `closed` and stops
        if self._answer is not None:
            self._answer.connection_lost(exc)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    async def drain(self) -> None:
        if self._writable is not None:
            await self._writable

    # -- httptools' callbacks, handed to the answer being read

    def on_header(self, name: bytes, value: bytes) -> None:
        self._answer.raw_headers.append((name, value))  # type: ignore[union-attr]

    def on_headers_complete(self) -> None:
        self._answer.head_complete(self.parser.get_status_code())  # type: ignore[union-attr]

    def on_body(self, body: bytes) -> None:
        self._answer.body(body)  # type: ignore[union-attr]

    def on_message_complete(self) -> None:
        answer = self._answer
        if answer.interim:  # type: ignore[union-attr]  # a 1xx head: the answer's own follows
            answer.interim = False  # type: ignore[union-attr]
            return
        self._answer = None
        answer.complete(keep=self.parser.should_keep_alive())  # type: ignore[union-attr]

    # -- the client's side

    def begin(self, answer: UpstreamResponse) -> None:
        self._answer = answer


class UpstreamResponse:
    """An answer's status and headers; its body through `iter_any`."""

    def __init__(self, upstream: Upstream, connection: _Connection, *, head_only: bool) -> None:
        self.status = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self._upstream = upstream
        self._connection: _Connection | None = connection
        self._head_only = head_only
        self._head: asyncio.Future = asyncio.get_running_loop().create_future()
        self._chunks: deque[bytes] = deque()
        self._held = 0
        self._ended = False
        self._error: BaseException | None = None
        self._wakeup: asyncio.Future | None = None
        self._paused = False
        self.received_any = False
        self.interim = False  # reading a 1xx head (`100 Continue`), which is not the answer
        self.read_timeout: float | None = None  # seconds `iter_any` waits for the next read, if bounded

    def header(self, name: bytes) -> str:
        """The value of header `name` (lower case), or ''."""
        return next((v.decode("latin-1") for n, v in self.raw_headers if n.lower() == name), "")

    # -- from the connection

    def head_complete(self, status: int) -> None:
        self.received_any = True
        if 100 <= status < 200:  # an interim answer (101 is refused by the parser as an upgrade)
            self.interim = True
            self.raw_headers.clear()
            return
        self.status = status
        if not self._head.done():
            self._head.set_result(None)
        if self._head_only:  # the head of an answer to HEAD announces a body that does not follow
            self._ended = True
            self._release(keep=False)

    def body(self, data: bytes) -> None:
        self._chunks.append(data)
        self._held += len(data)
        if self._held > _READ_LIMIT and not self._paused:
            self._pause(True)  # a slow client: let TCP hold the rest
        self._wake()

    def _pause(self, paused: bool) -> None:
        transport = self._connection.transport if self._connection is not None else None
        if transport is not None and not transport.is_closing():
            transport.pause_reading() if paused else transport.resume_reading()
        self._paused = paused

    def complete(self, *, keep: bool) -> None:
        if self._paused:
            self._pause(False)  # the connection goes back to the pool reading
        self._ended = True
        self._release(keep=keep)
        self._wake()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._ended:
            return
        framed = self.header(b"content-length") or "chunked" in self.header(b"transfer-encoding").lower()
        if exc is None and self._head.done() and not framed:  # a body that runs to the end of the connection
            self.complete(keep=False)
        else:
            detail = f" ({type(exc).__name__}: {exc})" if exc else ""
            self.fail(UpstreamError(f"the upstream closed the connection before the end of its answer{detail}"))

    def fail(self, error: BaseException) -> None:
        self._error = error
        if not self._head.done():
            self._head.set_exception(error)
        self._release(keep=False)
        self._wake()

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _release(self, *, keep: bool) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._upstream.release(connection, keep=keep)

    # -- to the proxy

    async def head(self) -> None:
        await self._head

    async def iter_any(self) -> AsyncIterator[bytes]:
        """The body as it arrives: each item is all that has come since the last."""
        while True:
            if self._chunks:
                data = self._chunks.popleft() if len(self._chunks) == 1 else b"".join(self._chunks)
                self._chunks.clear()
                self._held = 0
                if self._paused:
                    self._pause(False)
                yield data
            elif self._error is not None:
                raise self._error
            elif self._ended:
                return
            else:
                self._wakeup = asyncio.get_running_loop().create_future()
                try:
                    async with asyncio.timeout(self.read_timeout):
                        await self._wakeup
                except TimeoutError:
                    self.close()
                    raise UpstreamError(f"the upstream sent nothing for {self.read_timeout:g} s") from None

    def close(self) -> None:
        """Let go of the connection: reused if the answer was read to its end, closed otherwise
        (which cancels the request, for an upstream that watches its connection)."""
        if self._connection is not None:
            self._ended = True
            self._release(keep=False)


def tls_context(ca_file: str | None = None, verify: bool = True) -> ssl.SSLContext:
    """The client's TLS settings: the certificate and host name checked against the system's
    authorities, or `ca_file`'s; nothing checked with `verify=False`."""
    context = ssl.create_default_context(cafile=ca_file)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Upstream:
    """Kept-alive connections to one origin: `scheme` (http or https), `host`, `port` (None: the
    scheme's); for https, the authorities trusted (`ca_file`, else the system's), whether the
    certificate is checked at all (`verify`), and an HTTP proxy to tunnel through (`proxy`, a URL
    such as `$HTTPS_PROXY`'s: `CONNECT`, then TLS end to end with the upstream)."""

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int | None,
        *,
        connect_timeout: float,
        ca_file: str | None = None,
        verify: bool = True,
        proxy: str | None = None,
    ) -> None:
        self.host = host
        self.proxy = urlsplit(proxy) if proxy and scheme == "https" else None
        self.port = port or (443 if scheme == "https" else 80)
        self.ssl: ssl.SSLContext | None = tls_context(ca_file, verify) if scheme == "https" else None
        name = f"[{host}]" if ":" in host else host
        self.host_header = (name if port is None else f"{name}:{port}").encode("idna")
        self.connect_timeout = connect_timeout
        self._idle: deque[_Connection] = deque()
        self._open: set[_Connection] = set()

    async def request(
        self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes | AsyncIterator[bytes]
    ) -> UpstreamResponse:
        """Send a request and wait for the answer's head. A held `body` (bytes) leaves with the head in
        one write; an iterator's parts are sent as they come (`headers` then carry its length)."""
        head = [f"{method} {target} HTTP/1.1\r\nHost: ".encode("latin-1"), self.host_header, b"\r\n"]
        for name, value in headers:
            head += [name, b": ", value, b"\r\n"]
        chunked = False
        if isinstance(body, bytes):
            if body or method not in ("GET", "HEAD", "DELETE", "OPTIONS"):
                head.append(b"Content-Length: %d\r\n" % len(body))
        elif not any(name.lower() == b"content-length" for name, _ in headers):
            chunked = True  # a body of unknown length, passed on as it arrives
            head.append(b"Transfer-Encoding: chunked\r\n")
        head.append(b"\r\n")
        message = b"".join(head)
        # A kept-alive connection may have been closed by the upstream meanwhile: a held request is sent
        # again, once, on a new connection, when nothing at all came back on the old one.
        for attempt in range(2):
            connection, reused = await self._connection()
            answer = UpstreamResponse(self, connection, head_only=method == "HEAD")
            connection.begin(answer)
            try:
                if isinstance(body, bytes):
                    connection.transport.write(message + body)  # type: ignore[union-attr]
                else:
                    connection.transport.write(message)  # type: ignore[union-attr]
                    async for part in body:
                        if connection.closed:
                            raise UpstreamError("the upstream closed the connection during the request body")
                        if part:
                            connection.transport.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)  # type: ignore[union-attr]
                        await connection.drain()
                    if chunked:
                        connection.transport.write(b"0\r\n\r\n")  # type: ignore[union-attr]
                await answer.head()
                return answer
            except UpstreamError:
                answer.close()
                if attempt or not reused or answer.received_any or not isinstance(body, bytes):
                    raise
            except BaseException:
                answer.close()  # cancelled (a deadline) or the request body broke off: the connection goes
                raise
        raise AssertionError("unreachable")

    async def _connection(self) -> tuple[_Connection, bool]:
        """A connection, and whether it served a request before."""
        while self._idle:
            connection = self._idle.pop()  # the most recently used: the least likely to have timed out
            if not connection.closed and not connection.transport.is_closing():  # type: ignore[union-attr]
                return connection, True
            self._open.discard(connection)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.proxy is not None:
                    connection = await self._tunnel()
                else:
                    _, connection = await loop.create_connection(
                        _Connection, self.host, self.port, ssl=self.ssl, server_hostname=self.host if self.ssl else None
                    )
        except TimeoutError:
            raise UpstreamError(f"no connection to {self.host}:{self.port} within {self.connect_timeout:g} s") from None
        except ssl.SSLError as exc:  # a certificate refused, or no TLS at all: say which, never go on in clear
            raise UpstreamError(f"no TLS connection to {self.host}:{self.port}: {exc.reason or exc}") from None
        except OSError as exc:
            raise UpstreamError(f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}") from None
        self._open.add(connection)
        return connection, False

    async def _tunnel(self) -> _Connection:
        """A connection through the proxy: `CONNECT host:port`, then TLS inside the tunnel."""
        proxy = self.proxy
        assert proxy is not None and self.ssl is not None
        reader, writer = await asyncio.open_connection(proxy.hostname, proxy.port or 80)
        target = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if proxy.username is not None:
            secret = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}".encode()
            head += f"Proxy-Authorization: Basic {base64.b64encode(secret).decode()}\r\n"
        writer.write(head.encode("idna") + b"\r\n")
        try:
            answer = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            raise UpstreamError(f"the proxy at {proxy.hostname} closed the tunnel to {target}") from None
        status = answer.split(b"\r\n", 1)[0]
        if status.split(b" ")[1:2] != [b"200"]:
            writer.close()
            raise UpstreamError(
                f"the proxy at {proxy.hostname} refused a tunnel to {target}: {status.decode('latin-1')}"
            )
        loop = asyncio.get_running_loop()
        transport = await loop.start_tls(
            writer.transport, writer.transport.get_protocol(), self.ssl, server_hostname=self.host
        )
        connection = _Connection()
        connection.tunnel = writer  # a stream writer closes its transport once collected: kept with the connection
        transport.set_protocol(connection)
        connection.connection_made(transport)
        return connection

    def release(self, connection: _Connection, *, keep: bool) -> None:
        if keep and not connection.closed:
            self._idle.append(connection)
            return
        self._open.discard(connection)
        if connection.transport is not None:
            connection.transport.close()

    async def aclose(self) -> None:
        for connection in list(self._open):
            if connection.transport is not None:
                with contextlib.suppress(Exception):
                    connection.transport.close()
        self._open.clear()
        self._idle.clear()
