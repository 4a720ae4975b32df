"""The one client to an upstream (`openresponses_runtime.upstream`), against a raw HTTP/1.1 server on
loopback: kept-alive connections are reused, a connection the upstream closed meanwhile costs no
request, bodies that run to the end of the connection arrive whole, and one that breaks off says so;
the same over TLS, with a test authority made here: verified by default, a certificate the client
cannot trust refused."""

from __future__ import annotations

import asyncio
import ssl

import pytest
from openresponses_runtime.upstream import Upstream, UpstreamError

from ..tls_authority import authority as _authority

_OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


async def _serve(answer, *, close_after: bool = False, tls: ssl.SSLContext | None = None):
    """A server that reads each request (head and `Content-Length` body) and writes `answer(request, n)`
    (n: the count of requests so far), or closes the connection if that is None;
    returns (server, port, the client ports it saw, the requests)."""
    peers: list[int] = []
    requests: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(writer.get_extra_info("peername")[1])
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                request = head + await reader.readexactly(length)
                requests.append(request)
                reply = answer(request, len(requests))
                if reply is None:  # as a server whose keep-alive timeout ran out as the request came
                    writer.close()
                    return
                writer.write(reply)
                await writer.drain()
                if close_after:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    return server, server.sockets[0].getsockname()[1], peers, requests


async def _fetch(pool: Upstream, body: bytes = b"{}") -> tuple[int, bytes]:
    answer = await pool.request("POST", "/v1/responses", [(b"x-client", b"1")], body)
    data = b"".join([chunk async for chunk in answer.iter_any()])
    answer.close()
    return answer.status, data


def test_one_kept_alive_connection_serves_requests_one_after_another():
    async def run():
        server, port, peers, requests = await _serve(lambda *_: _OK)
        pool = Upstream("http", "127.0.0.1", port, connect_timeout=5)
        answers = [await _fetch(pool) for _ in range(5)]
        await pool.aclose()
        server.close()
        return answers, peers, requests, port

    answers, peers, requests, port = asyncio.run(run())
    assert answers == [(200, b"ok")] * 5
    assert len(peers) == 1, "each request opened a connection of its own"
    # The client's headers, `Host` and the body's length: nothing of the proxy's own.
    assert (
        requests
        == [
            f"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-client: 1\r\nContent-Length: 2\r\n\r\n{{}}".encode()
        ]
        * 5
    )


def test_a_connection_the_upstream_closed_meanwhile_costs_no_request():
    async def run():
        # Closed after answering (the pool finds it closed), and closed as a request came (sent again).
        server, port, peers, requests = await _serve(lambda _, n: None if n == 3 else _OK, close_after=False)
        pool = Upstream("http", "127.0.0.1", port, connect_timeout=5)
        answers = [await _fetch(pool) for _ in range(3)]
        await pool.aclose()
        server.close()
        return answers, peers, requests

    answers, peers, requests = asyncio.run(run())
    assert answers == [(200, b"ok")] * 3
    assert len(requests) == 4 and len(peers) == 2  # the third request twice, the second time on a new connection


def test_a_body_that_runs_to_the_end_of_the_connection_arrives_whole():
    body = b"data: one\n\n" * 1000
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + body

    async def run():
        server, port, _, _ = await _serve(lambda *_: reply, close_after=True)
        pool = Upstream("http", "127.0.0.1", port, connect_timeout=5)
        got = await _fetch(pool)
        await pool.aclose()
        server.close()
        return got

    assert asyncio.run(run()) == (200, body)


def test_a_body_cut_short_is_an_error_and_an_unreachable_upstream_is_one_too():
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"

    async def run():
        server, port, _, _ = await _serve(lambda *_: reply, close_after=True)
        pool = Upstream("http", "127.0.0.1", port, connect_timeout=5)
        with pytest.raises(UpstreamError, match="before the end of its answer"):
            await _fetch(pool)
        server.close()
        await server.wait_closed()
        with pytest.raises(UpstreamError, match="cannot connect"):
            await _fetch(Upstream("http", "127.0.0.1", port, connect_timeout=5))
        await pool.aclose()

    asyncio.run(run())


def test_an_interim_head_is_passed_over_and_an_answer_without_a_body_keeps_the_connection():
    replies = {1: b"HTTP/1.1 100 Continue\r\n\r\n" + _OK, 2: b"HTTP/1.1 204 No Content\r\nX-Seen: 1\r\n\r\n", 3: _OK}

    async def run():
        server, port, peers, _ = await _serve(lambda _, n: replies[n])
        pool = Upstream("http", "127.0.0.1", port, connect_timeout=5)
        answers = [await _fetch(pool) for _ in range(3)]
        await pool.aclose()
        server.close()
        return answers, peers

    answers, peers = asyncio.run(run())
    assert answers == [(200, b"ok"), (204, b""), (200, b"ok")] and len(peers) == 1


# -- TLS, against an authority made for the test ---------------------------------------------------


def test_an_https_upstream_is_verified_against_the_given_authority_and_kept_alive(tmp_path):
    ca_file, tls = _authority(tmp_path)

    async def run():
        server, port, peers, requests = await _serve(lambda _, n: None if n == 3 else _OK, tls=tls)
        pool = Upstream("https", "127.0.0.1", port, connect_timeout=5, ca_file=str(ca_file))
        answers = [await _fetch(pool) for _ in range(3)]
        await pool.aclose()
        server.close()
        return answers, peers, requests

    answers, peers, requests = asyncio.run(run())
    assert answers == [(200, b"ok")] * 3
    # one kept-alive TLS connection for the first two; the third, closed under it, sent again once on a new one
    assert len(requests) == 4 and len(peers) == 2


@pytest.mark.parametrize(
    ("names", "ip", "trusted"),
    [
        (("localhost",), True, False),  # an authority the system does not know
        (("elsewhere.example",), False, True),  # a certificate for another host, from a trusted authority
    ],
)
def test_a_certificate_the_client_cannot_trust_is_refused(tmp_path, names, ip, trusted):
    ca_file, tls = _authority(tmp_path, names=names, ip=ip)

    async def run():
        server, port, _, requests = await _serve(lambda *_: _OK, tls=tls)
        pool = Upstream("https", "127.0.0.1", port, connect_timeout=5, ca_file=str(ca_file) if trusted else None)
        with pytest.raises(UpstreamError, match="no TLS connection to 127.0.0.1"):
            await _fetch(pool)
        unchecked = Upstream("https", "127.0.0.1", port, connect_timeout=5, verify=False)
        answer = await _fetch(unchecked)  # what `verify=False` lets through: nothing else does
        for each in (pool, unchecked):
            await each.aclose()
        server.close()
        return requests, answer

    requests, answer = asyncio.run(run())
    assert answer == (200, b"ok") and len(requests) == 1  # the refused connection sent no request


def test_a_tls_stream_cut_short_is_an_error(tmp_path):
    ca_file, tls = _authority(tmp_path)
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 1000\r\n\r\ndata: {}\n\n"

    async def run():
        server, port, _, _ = await _serve(lambda *_: reply, close_after=True, tls=tls)
        pool = Upstream("https", "127.0.0.1", port, connect_timeout=5, ca_file=str(ca_file))
        answer = await pool.request("POST", "/v1/chat/completions", [], b"{}")
        got = []
        with pytest.raises(UpstreamError, match="before the end of its answer"):
            async for chunk in answer.iter_any():
                got.append(chunk)
        await pool.aclose()
        server.close()
        return b"".join(got)

    assert asyncio.run(run()) == b"data: {}\n\n"  # what came before the cut came through


async def _tunnelling_proxy():
    """An HTTP proxy that answers `CONNECT host:port` with a tunnel (bytes relayed both ways); returns
    (server, port, the CONNECT heads it saw)."""
    heads: list[bytes] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], heads


def test_an_https_upstream_through_a_proxy_tunnel_is_verified_end_to_end(tmp_path):
    ca_file, tls = _authority(tmp_path)

    async def run():
        server, port, peers, _ = await _serve(lambda *_: _OK, tls=tls)
        proxy, proxy_port, heads = await _tunnelling_proxy()
        pool = Upstream(
            "https",
            "localhost",
            port,
            connect_timeout=5,
            ca_file=str(ca_file),
            proxy=f"http://u:p@127.0.0.1:{proxy_port}",
        )
        answers = [await _fetch(pool) for _ in range(2)]
        await pool.aclose()
        server.close()
        proxy.close()
        return answers, peers, heads, port

    answers, peers, heads, port = asyncio.run(run())
    assert answers == [(200, b"ok")] * 2 and len(peers) == 1  # one tunnel, kept alive
    assert heads == [f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n".encode() +
                     b"Proxy-Authorization: Basic dTpw\r\n\r\n"]  # fmt: skip
