"""The spine of every gateway: the transport to its upstream, one mapping of upstream errors, and
compaction. A gateway (`GatewayProvider`'s subclass) brings only its mappings: the body it sends
for a turn, where and with which headers, and how the upstream's events become steps.

Upstream errors before the answer begins map the same way in every gateway (`ERROR_RULES`), with
per-gateway additions in `GatewayProvider.error_rules`:

| upstream status | answer |
|---|---|
| 400, 413 (the request too large for the upstream), 422 | 400 `upstream_invalid_request`: the client must change the request |
| 401, 403 | 500 `upstream_unauthorized`: the gateway's own key is wrong, not the client's |
| 429 | 429 `rate_limit_exceeded`, `Retry-After` passed on |
| 503 | 503 `upstream_overloaded`, `Retry-After` passed on: a retry may succeed |
| anything else | 502 |

An upstream that cannot be reached is a 502 `upstream_unreachable`; a 200 that is neither an event
stream nor a whole answer, a 502 `upstream_bad_response`.

`POST /responses/input_tokens` asks the upstream's own count (`count_request`: Anthropic's
`count_tokens`, Gemini's `countTokens`), the same body a turn would send; a gateway whose upstream
has none answers 501 `not_implemented`.

`reasoning.effort` and `reasoning.summary` turn thinking on as each upstream takes it, by tables a
deployment may override (`effort_table`): see each gateway's docstring. What a gateway leaves out
of a request because its upstream would refuse it (say `temperature` with Anthropic's thinking) is
named with `ignore`, as the server names what it ignored: in the `OpenResponses-Ignored` header.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from urllib.request import getproxies, proxy_bypass

from ..redaction import REDACTED, public_urls
from ..server import (
    Accepted,
    InvalidRequest,
    ModelError,
    NotFound,
    NotImplementedOperation,
    OpenResponsesError,
    ProviderRequest,
    ServerError,
    Step,
    TooManyRequests,
)

# The one place the gateways take JSON and ids from.
from ..server.ids import new_id
from ..server.wire import dumps, loads
from ..upstream import Upstream, UpstreamError, UpstreamResponse, tls_context
from .stream import PlainShape, PlainText, finish_reading, json_events, replayable

__all__ = [
    "EFFORTS",
    "ERROR_RULES",
    "MODEL_NOT_FOUND",
    "OTHER",
    "ErrorRule",
    "PlainShape",
    "PlainText",
    "GatewayProvider",
    "UpstreamClient",
    "UpstreamResponse",
    "aiter_of",
    "content_text",
    "data_url",
    "dumps",
    "effort_table",
    "expand_compactions",
    "finish_reading",
    "ignore",
    "json_events",
    "loads",
    "new_id",
    "reasoning_asked",
    "replayable",
    "upstream_error",
]

log = logging.getLogger("openresponses_runtime.gateways")


# -- input, as the upstreams take it --------------------------------------------------------


def content_text(content: Any) -> str:
    """A message's content as plain text: a string as it is, or its text and refusal parts joined."""
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", part.get("refusal", "")))
        for part in content or ()
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text", "refusal")
    )


def data_url(url: str) -> tuple[str, str]:
    """The media type and base64 data of a `data:` URL; only base64 ones, which every upstream takes."""
    header, _, data = url.partition(",")
    if not header.endswith(";base64") or not data:
        raise InvalidRequest("An image data URL must be base64: data:image/png;base64,...", param="input")
    return header[5:].split(";")[0], data


# -- reasoning -------------------------------------------------------------------------------

EFFORTS = ("none", "low", "medium", "high", "xhigh")  # the spec's `reasoning.effort`, least first
T = TypeVar("T")


def reasoning_asked(request: ProviderRequest) -> tuple[str | None, str | None]:
    """The request's `reasoning.effort` and `reasoning.summary`, None where it sets none."""
    reasoning = request.reasoning or {}
    return reasoning.get("effort"), reasoning.get("summary")


def effort_table(
    defaults: Mapping[str, T],
    overrides: Mapping[str, T] | None,
    *,
    name: str,
    valid: Callable[[T], bool],
    expected: str,
) -> dict[str, T]:
    """`defaults` (effort -> what an upstream takes for it) with a deployment's `overrides`; an
    effort the table has no row for, or a value `valid` refuses, is a `ValueError` that says which
    (`name`: the table, as the deployment named it; `expected`: what a value must be)."""
    table = dict(defaults)
    for effort, value in (overrides or {}).items():
        if effort not in defaults:
            raise ValueError(f"{name}: no effort {effort!r}; the efforts are {', '.join(defaults)}")
        if not valid(value):
            raise ValueError(f"{name} {effort}={value!r}: {expected}")
        table[effort] = value
    return table


def ignore(request: ProviderRequest, *parameters: str, kind: str = "parameter") -> None:
    """Name request `parameters` a gateway left out because its upstream would refuse them, in
    `request.ignored` (as `parameter:<name>`, or with `kind="item"` an input item's type,
    `item:<type>`), which the server reports as for what it ignored itself."""
    names = [f"{kind}:{name}" for name in parameters]
    request.ignored = (*request.ignored, *(name for name in names if name not in request.ignored))


# -- transport -------------------------------------------------------------------------------


_URL_SAFE = "/%:@!$&'()*+,;=~"  # besides letters, digits and `_.-`: what a path or query keeps as it is


class UpstreamClient:
    """Kept-alive connections to each upstream origin (`openresponses_runtime.upstream`: httptools,
    TCP_NODELAY, TLS verified by default, against `ca_file` when given), made on first use in each
    event loop and kept for the next turns. An https upstream is reached through `$HTTPS_PROXY`
    when the environment names one (and `$NO_PROXY` does not exempt the host). A connection belongs to the loop it was made in, so a new
    loop (a test's `asyncio.run`) gets its own.

    A client per turn built a TLS context (about 50 ms of CPU) and a new connection every time: more
    than all the translation of a 2,000-event stream. The pool has no cap on connections in use: the
    server's stream cap (`--max-streams`) is the one bound on upstream streams. `timeout`: seconds
    to connect, for the answer's head, and between two reads of its body."""

    def __init__(self, timeout: float, ca_file: str | None = None):
        self.timeout = timeout
        self.ca_file = ca_file
        self._pools: dict[tuple[str, str, int | None], Upstream] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def pool(self, url: str) -> tuple[Upstream, str]:
        """The pool for `url`'s origin, and the request target (path and query) on it."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._pools, self._loop = {}, loop
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamError(f"the upstream URL {url!r} is no http:// or https:// URL")
        key = (parts.scheme, parts.hostname, parts.port)
        pool = self._pools.get(key)
        if pool is None:
            proxy = None if proxy_bypass(parts.hostname) else getproxies().get(parts.scheme)
            pool = Upstream(
                parts.scheme,
                parts.hostname,
                parts.port,
                connect_timeout=self.timeout,
                ca_file=self.ca_file,
                proxy=proxy,
            )
            self._pools[key] = pool
        # what a URL may not hold as it is (a model name's space, say) percent-encoded, escapes kept
        path, query = quote(parts.path or "/", safe=_URL_SAFE), quote(parts.query, safe=_URL_SAFE + "?")
        return pool, path + (f"?{query}" if query else "")

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> UpstreamResponse:
        """POST `body` (JSON) and wait, at most `timeout`, for the answer's head; the answer's body
        reads with the same deadline between reads."""
        pool, target = self.pool(url)
        own = [(b"content-type", b"application/json"), (b"user-agent", b"openresponses-runtime")]
        parts = urlsplit(url)
        if parts.username is not None:  # `https://user:password@host/`: sent as Basic credentials, never in the URL
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            own.append((b"authorization", b"Basic " + base64.b64encode(pair)))
        sent = [*own, *((k.encode(), v.encode()) for k, v in headers.items())]
        try:
            async with asyncio.timeout(self.timeout):
                answer = await pool.request("POST", target, sent, body)
        except TimeoutError:
            raise UpstreamError(f"no answer within {self.timeout:g} s") from None
        answer.read_timeout = self.timeout
        return answer


async def read_all(reply: UpstreamResponse) -> bytes:
    """An answer's whole body."""
    return b"".join([chunk async for chunk in reply.iter_any()])


async def aiter_of(events: Iterable[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """`events` as the async stream a gateway reads, for an answer that came whole."""
    for event in events:
        yield event


# -- errors ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorRule:
    """How an upstream error status is answered: the spec's error `kind`, its `code`, the HTTP
    `status` (else the kind's own), the `wording` the message begins with, whether the upstream's
    `Retry-After` is passed on (`retry`), the request field it names (`param`), and whether the
    upstream's own words follow (`quote`)."""

    kind: type[OpenResponsesError]
    code: str | None
    wording: str
    status: int | None = None
    retry: bool = False
    param: str | None = None
    quote: bool = True


_REFUSED = ErrorRule(InvalidRequest, "upstream_invalid_request", "The upstream refused the request")
# The upstream's words about the gateway's own key are not the client's business.
_UNAUTHORIZED = ErrorRule(
    ServerError, "upstream_unauthorized", "The gateway's upstream credentials were refused", quote=False
)
ERROR_RULES: Mapping[int, ErrorRule] = {
    400: _REFUSED,
    413: _REFUSED,  # too large for the upstream, which our server read whole: the request must change
    422: _REFUSED,
    401: _UNAUTHORIZED,
    403: _UNAUTHORIZED,
    429: ErrorRule(TooManyRequests, "rate_limit_exceeded", "The upstream is rate limited", retry=True),
    503: ErrorRule(ModelError, "upstream_overloaded", "The upstream is overloaded", status=503, retry=True),
}
OTHER = ErrorRule(ModelError, "model_error", "The upstream failed", status=502)
MODEL_NOT_FOUND = ErrorRule(NotFound, "model_not_found", "The upstream has no such model", param="model")


def upstream_error(
    status: int,
    message: str,
    retry_after: str | None = None,
    rules: Mapping[int, ErrorRule] = ERROR_RULES,
) -> OpenResponsesError:
    """The spec's error for an upstream's error `status` with its `message`, by `rules` (else `OTHER`)."""
    rule = rules.get(status, OTHER)
    headers = {"Retry-After": retry_after} if rule.retry and retry_after else None
    said = f" ({status})" if rule is OTHER else ""  # any status may end here: say which
    text = f"{rule.wording}{said}: {message}" if rule.quote else f"{rule.wording}."
    return rule.kind(text, code=rule.code, status=rule.status, headers=headers, param=rule.param)


# -- compaction ------------------------------------------------------------------------------


def expand_compactions(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Compaction items made by `GatewayProvider.compact` opened back into the items they hold."""
    out = []
    for item in items:
        if item.get("type") == "compaction":
            try:
                out += expand_compactions(json.loads(base64.b64decode(item.get("encrypted_content") or "")))
            except ValueError:
                continue  # someone else's compaction: nothing a gateway can read
        else:
            out.append(item)
    return out


# -- the provider ----------------------------------------------------------------------------


def url_credentials(url: str) -> set[str]:
    """What a URL carries that is a credential, in every form it travels in: its user and password (as
    written and decoded, apart and as `user:password`, and as the Basic credential an HTTP client
    builds from them), and its query (whole, and each value, as written and decoded)."""
    parts = urlsplit(url)
    found: set[str] = set()
    user, password = parts.username or "", parts.password or ""
    if user or password:
        for pair in ((user, password), (unquote(user), unquote(password))):
            found.update(pair)
            found.add(":".join(pair))
            found.add(base64.b64encode(":".join(pair).encode()).decode())
    if parts.query:
        found.add(parts.query)
        for _, value in parse_qsl(parts.query, keep_blank_values=True):
            found.update((value, quote(value, safe="")))
    return found - {"", ":"}


def blank(text: str, secrets: Iterable[str]) -> str:
    """`text` with each of `secrets` replaced by `[redacted]`, the longest first (one may hold another)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


# Every credential a gateway of this process holds, blanked from the gateways' log records too (an
# upstream's frame or words logged as they came), whoever logs them.
_HELD: set[str] = set()


class _Redacting(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if _HELD:
            message = record.getMessage()
            scrubbed = public_urls(blank(message, _HELD))
            if scrubbed != message:
                record.msg, record.args = scrubbed, None
        return True


log.addFilter(_Redacting())
logging.getLogger("httpx").addFilter(_Redacting())  # a project's own httpx logs request lines, whole URLs and all


class GatewayProvider:
    """A provider in front of another model API: one streamed POST a turn.

    A subclass defines `upstream_request` (the body), `endpoint` (the URL for the request and body), `upstream_headers`,
    `steps` (the upstream's events as the request's steps) and `whole_answer` (a 200 that did not stream, as
    events); optionally `stream_events` (the events of a streamed answer, SSE by default),
    `error_message` and `error_rules`. `model` replaces the model every request names; else
    `models` renames the ones it lists and the rest pass through. An https upstream's certificate
    is checked against the system's authorities, or `ca_file`'s (a PEM bundle: a private CA's).
    """

    error_rules: ClassVar[Mapping[int, ErrorRule]] = {}  # this upstream's own, over ERROR_RULES

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str | None,
        models: Mapping[str, str] | None,
        extra_body: Mapping[str, Any] | None,
        timeout: float,
        ca_file: str | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.models = dict(models or {})
        self.extra_body = dict(extra_body or {})
        self.timeout = timeout
        if ca_file is not None:  # read now: a bundle that cannot be used is the deployment's error, at start
            try:
                tls_context(ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError(f"the CA file {ca_file}: {getattr(exc, 'strerror', None) or exc}") from None
        self._http = UpstreamClient(timeout, ca_file)

    # -- what each gateway defines

    def upstream_request(self, request: ProviderRequest) -> dict[str, Any]:
        raise NotImplementedError

    def endpoint(self, request: ProviderRequest, body: dict[str, Any]) -> str:
        raise NotImplementedError

    def upstream_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def steps(self, request: ProviderRequest, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[Step]:
        raise NotImplementedError

    def whole_answer(self, kind: str, body: bytes) -> Iterable[dict[str, Any]]:
        """The events of a 200 that is not an event stream; by default, a 502."""
        raise self.not_a_stream(kind, body)

    def stream_events(self, reply: UpstreamResponse) -> AsyncIterator[dict[str, Any]]:
        return json_events(reply)

    def error_message(self, body: Any) -> str:
        """The upstream's words in an error body (`{"error": {"message": ...}}` for most APIs)."""
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            return str(error.get("message") or error.get("type") or json.dumps(error))
        return json.dumps(error if error is not None else body)

    # -- what they share

    def upstream_model(self, requested: str) -> str:
        """The model named upstream for the one a request names."""
        return self.model or self.models.get(requested, requested)

    def upstream_error(self, status: int, body: bytes, retry_after: str | None = None) -> OpenResponsesError:
        try:
            message = self.error_message(loads(body))
        except ValueError:
            message = body.decode(errors="replace")[:200]
        return upstream_error(status, self.scrub(message), retry_after, {**ERROR_RULES, **self.error_rules})

    def not_a_stream(self, kind: str, body: bytes) -> OpenResponsesError:
        return ModelError(
            f"The upstream answered 200 with {kind or 'no content type'}, not an event stream: "
            f"{self.scrub(body.decode(errors='replace')[:100])!r}",
            code="upstream_bad_response",
            status=502,
        )

    def credentials(self) -> set[str]:
        """Every credential this gateway holds: its key, every header value it sends of 8 characters or
        more (`anthropic-version: 2023-06-01` is no secret), and what its upstream URL carries
        (`url_credentials`) of 4 or more (shorter would blank ordinary words)."""
        headers = {value for value in self.upstream_headers().values() if len(value) >= 8}
        held = {self.api_key, *headers, *(c for c in url_credentials(self.base_url) if len(c) >= 4)} - {""}
        _HELD.update(held)
        return held

    def scrub(self, text: str) -> str:
        """`text` fit for the client, a log or a record: every credential this gateway holds blanked, and
        URLs without their credentials (`redaction.public_urls`)."""
        return public_urls(blank(text, self.credentials()))

    @property
    def public_url(self) -> str:
        """The upstream's URL as it may be shown: no credentials (`redaction.public_urls`)."""
        return public_urls(self.base_url)

    async def respond(self, request: ProviderRequest) -> AsyncIterator[Step]:
        # One generator from the upstream's events to the server: each layer more costs every event.
        self.credentials()  # known to the log filter before anything is sent
        try:
            payload = self.upstream_request(request)
            url = self.endpoint(request, payload)
            try:
                reply = await self._http.post(url, dumps(payload), self.upstream_headers())
            except UpstreamError as exc:  # before the answer began: no stream to end
                raise ModelError(
                    f"The upstream at {url} cannot be reached: {exc}", code="upstream_unreachable", status=502
                ) from None
            try:
                if reply.status != 200:
                    body = await self._whole(reply, url)
                    raise self.upstream_error(reply.status, body, reply.header(b"retry-after") or None)
                kind = reply.header(b"content-type").split(";")[0].strip().lower()
                if kind == "text/event-stream":
                    events = self.stream_events(reply)
                else:  # some servers answer whole whatever the request asked: read it as its events
                    events = aiter_of(self.whole_answer(kind, await self._whole(reply, url)))
                yield Accepted()  # the client's stream begins now, however long the upstream thinks
                async for step in self.steps(request, events):
                    yield step
                await finish_reading(events)  # what follows the last event: the end of the body
            finally:
                reply.close()  # back to the pool if read to its end, else closed (which cancels upstream)
        except OpenResponsesError as exc:  # the client's answer (an upstream's error event too): scrubbed
            exc.message = self.scrub(exc.message)
            raise
        except Exception as exc:  # a bug, or a library's error: logged with its traceback, its words scrubbed
            exc.args = tuple(self.scrub(arg) if isinstance(arg, str) else arg for arg in exc.args)
            raise

    async def _whole(self, reply: UpstreamResponse, url: str) -> bytes:
        try:
            return await read_all(reply)
        except UpstreamError as exc:
            raise ModelError(
                self.scrub(f"The upstream at {url} broke off its answer: {exc}"),
                code="upstream_unreachable",
                status=502,
            ) from None

    # -- counting input tokens

    def count_request(self, request: ProviderRequest) -> tuple[str, dict[str, Any]] | None:
        """The URL and body that ask the upstream to count `request`'s input tokens; None: it cannot."""
        return None

    def tokens_counted(self, answer: dict[str, Any]) -> Any:
        """The count in the upstream's answer to `count_request`."""
        raise NotImplementedError

    async def count_input_tokens(self, request: ProviderRequest) -> int:
        found = self.count_request(request)
        if found is None:
            raise NotImplementedOperation(
                "This gateway's upstream offers no token count.", operation="count_input_tokens"
            )
        url, payload = found
        try:
            reply = await self._http.post(url, dumps(payload), self.upstream_headers())
            try:
                body = await read_all(reply)
            finally:
                reply.close()
        except UpstreamError as exc:
            raise ModelError(
                self.scrub(f"The upstream at {url} cannot be reached: {exc}"), code="upstream_unreachable", status=502
            ) from None
        if reply.status != 200:
            raise self.upstream_error(reply.status, body, reply.header(b"retry-after") or None)
        try:
            answer = loads(body)
        except ValueError:
            answer = None
        count = self.tokens_counted(answer) if isinstance(answer, dict) else None
        if type(count) is not int or count < 0:
            raise ModelError(
                f"The upstream answered its token count with {self.scrub(body.decode(errors='replace')[:100])!r}, "
                "not a count.",
                code="upstream_bad_response",
                status=502,
            )
        return count

    async def compact(self, items: list[dict[str, Any]], *, model: str, instructions: str | None) -> list[dict]:
        """One opaque `compaction` item holding the conversation, which `expand_compactions` opens again."""
        blob = base64.b64encode(json.dumps(expand_compactions(items)).encode()).decode()
        return [{"type": "compaction", "id": new_id("cmp"), "encrypted_content": blob}]
