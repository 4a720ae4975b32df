"""An upstream's event stream as the gateways read it: the JSON object of each SSE message, and the
most common event of all (one more piece of answer text) read without parsing it whole.

Each gateway's translation costs little next to reading its upstream, so this is where a gateway's
CPU per event goes. The SSE framing is split as bytes (no text decoding: JSON parses from bytes),
and a gateway that names its plain text event (`PlainShape`) gets those events as `PlainText`: a
stream's text events differ only in their text (the same id, model and index each time), so once
one has been parsed whole, the bytes around its text are a template, and the next event that has
the same bytes around a JSON string is read by parsing that string alone.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..server.wire import dumps, loads

try:  # the plain text path's one JSON string; what orjson refuses goes the whole way, through `loads`
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover
    _fast_loads = loads
from ..upstream import UpstreamError, UpstreamResponse

__all__ = ["PlainShape", "PlainText", "SSEData", "Template", "finish_reading", "json_events", "replayable"]

log = logging.getLogger("openresponses_runtime.gateways")

_FINISH_SECONDS = 1.0  # what an upstream gets to end its body after its last event
_TEMPLATES = 8  # templates learned in one stream before it counts as one whose text events all differ
_AFTER_KEY = re.compile(rb'\s*:\s*"')
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_PROBE = "\x00probe\u00e9"  # a text no upstream sends, to check a template reads its text where it sits
# A JSON string on one line, as a pattern's one group.
_STRING = rb'("(?:[^"\\\n]|\\[^\n])*")'
_new_plain = tuple.__new__  # the named tuple's own `__new__` is a Python function: twice the cost


@dataclass(frozen=True)
class PlainShape:
    """What a gateway's plain text event is: `text_of(event)` is its text when `event` is one (a
    text and nothing else its translator would act on), else None; `key` is the JSON key, quoted,
    whose string value is that text (`b'"content"'`)."""

    key: bytes
    text_of: Callable[[dict[str, Any]], str | None]


class Template:
    """The bytes around the text of a plain text event (`head`, `tail`), the event they were learned
    from (`like`), and those of its whole SSE message: `start` (the lines before its data, such as
    Anthropic's `event:` line, then `data: ` and `head`) and `end` (`tail` and the blank line)."""

    __slots__ = ("head", "tail", "like", "start", "end", "junction")

    def __init__(self, lead: bytes, head: bytes, tail: bytes, like: dict[str, Any]):
        self.head, self.tail, self.like = head, tail, like
        self.start, self.end = lead + b"data: " + head, tail + b"\n\n"
        # Where one plain text message ends and the next begins. A literal pattern: the regular
        # expression engine's search, prepared once, beats `bytes.split`'s, prepared each time.
        self.junction = re.compile(re.escape(self.end + self.start))

    @classmethod
    def learn(cls, message: bytes, raw: bytes, event: dict[str, Any], shape: PlainShape) -> Template | None:
        """The template of plain text event `event` (parsed from data `raw`, of SSE `message`), if a
        probe text put in place of its text reads as the text, and its data is one line (an
        `event:` line before it at most)."""
        lead = message[: len(message) - len(raw) - 6]
        if message[len(lead) :] != b"data: " + raw or not (
            lead == b"" or lead[:7] == b"event: " and lead.count(b"\n") == 1
        ):
            return None
        at = raw.find(shape.key)
        found = _AFTER_KEY.match(raw, at + len(shape.key)) if at >= 0 else None
        string = _JSON_STRING.match(raw, found.end() - 1) if found else None
        if string is None:
            return None
        head, tail = raw[: string.start()], raw[string.end() :]
        try:
            probe = loads(head + b'"\\u0000probe\\u00e9"' + tail)
        except ValueError:
            return None
        if type(probe) is not dict or shape.text_of(probe) != _PROBE:
            return None
        return cls(lead, head, tail, event)


class PlainText(NamedTuple):
    """A run of plain text events (see `PlainShape`) one after another, read from their `template`:
    their `texts`. A translator in a state where such an event means more than text reads them
    as events: `first()` and the run of the rest, or all of them (`events()`)."""

    texts: list[str]
    template: Template

    def events(self) -> list[dict[str, Any]]:
        head, tail = self.template.head, self.template.tail
        return [loads(head + dumps(text) + tail) for text in self.texts]

    def first(self) -> list[Any]:
        """The first event whole, then the run of the rest (if any)."""
        head, tail = self.template.head, self.template.tail
        first = loads(head + dumps(self.texts[0]) + tail)
        return [first, PlainText(self.texts[1:], self.template)] if len(self.texts) > 1 else [first]


def replayable(chunks: AsyncIterator[Any]) -> tuple[AsyncIterator[Any], deque[Any]]:
    """`chunks`, and a queue whose items come next, before the rest of `chunks`: what a translator
    hands back to read again (a `PlainText` run's first event whole, then the rest)."""
    back: deque[Any] = deque()

    async def read() -> AsyncIterator[Any]:
        async for chunk in chunks:
            yield chunk
            while back:
                yield back.popleft()

    return read(), back


async def json_events(reply: UpstreamResponse, plain: PlainShape | None = None) -> AsyncIterator[Any]:
    """The JSON objects of an upstream's SSE stream, up to `data: [DONE]` or the end of the body;
    with `plain`, that shape's text events, once one has been read whole, as `PlainText` runs.

    A frame that is not a JSON object is skipped and logged. A connection that breaks off simply
    ends the objects: the gateway notices that the answer never finished. Each object is parsed
    when it is asked for: a whole network read's objects alive at once (hundreds) cost more in
    garbage collection than their parsing (a run's texts are strings, which the collector skips)."""
    frames = SSEData()
    body = reply.iter_any()
    template: Template | None = None
    templates = 0
    try:
        async for data in body:
            # Messages not yet read, each part with the template it was split by (None: not split).
            parts: deque[tuple[bytes | list[bytes], Template | None]] = deque([(frames.feed(data), None)])
            while parts:
                part, split_by = parts.popleft()
                if type(part) is list:  # a run of plain text messages' texts, as JSON strings
                    for chunk in _run(part, split_by):  # type: ignore[arg-type]
                        yield chunk
                    continue
                if template is not None and split_by is not template:
                    parts.extendleft(reversed([(piece, template) for piece in _plain_runs(part, template)]))  # type: ignore[arg-type]
                    continue
                for message, offset in _each_message(part):  # type: ignore[arg-type]
                    raw = _data(message)
                    if raw is None:
                        continue
                    if raw == b"[DONE]":
                        await finish_reading(body)
                        return
                    event = _object(raw)
                    if event is None:
                        continue
                    if plain is not None and templates < _TEMPLATES and plain.text_of(event) is not None:
                        learned = Template.learn(message, raw, event, plain)
                        if learned is not None:  # what follows is read again, by this template
                            template, templates = learned, templates + 1
                            parts.appendleft((part[offset:], None))  # type: ignore[index]
                            yield event
                            break
                    yield event
        for message in frames.close().split(b"\n\n"):
            raw = _data(message)
            if raw == b"[DONE]":
                return
            if raw is not None and (event := _object(raw)) is not None:
                yield event
    except UpstreamError as exc:
        log.warning("the upstream's stream broke off: %s", exc)


def _plain_runs(region: bytes, template: Template) -> list[bytes | list[bytes]]:
    """`region` (whole messages) as its other messages (bytes) and its runs of plain text messages
    of `template` (lists of their texts, as JSON strings), in order.

    The region is split at each junction of two plain text messages (`Template.junction`): the
    pieces between are their texts, unless another message came in between. The first message of
    a run and the last are checked apart: another message may end as a plain one does (Chat
    Completions' first chunk, with its role) or begin as one (Gemini's last, with its finish)."""
    pieces = template.junction.split(region)
    if len(pieces) == 1:
        return [region]
    start, tail = template.start, template.tail
    before, blank, first = pieces[0].rpartition(b"\n\n")
    if not first.startswith(start) or b"\n" in first[len(start) :]:  # not plain: it and those before are others
        cut = len(pieces[0]) + len(tail) + 2
        return [region[:cut], *_plain_runs(region[cut:], template)]
    last, blank_after, after = pieces[-1].partition(b"\n\n")
    if not (blank_after and last.endswith(tail)) or b"\n" in last:  # not plain: it and those after are others
        cut = len(region) - len(pieces[-1]) - len(start)
        return [*_plain_runs(region[:cut], template), region[cut:]]
    middle = pieces[1:-1]
    joined = b",\n".join(middle)
    if joined.count(b"\n") != max(len(middle) - 1, 0):  # another message in between
        return _message_by_message(region, template)
    out: list[bytes | list[bytes]] = [before + blank] if before else []
    out.append(
        [first[len(start) :], joined, last[: len(last) - len(tail)]]
        if middle
        else [first[len(start) :], last[: len(last) - len(tail)]]
    )
    return [*out, after] if after else out


def _message_by_message(region: bytes, template: Template) -> list[bytes | list[bytes]]:
    """`_plain_runs`, one message at a time: for plain text messages mixed with others."""
    start, tail = template.start, template.tail
    out: list[bytes | list[bytes]] = []
    for message in region[:-2].split(b"\n\n"):
        if message.startswith(start) and message.endswith(tail) and b"\n" not in message[len(start) :]:
            text = message[len(start) : len(message) - len(tail)]
            if out and type(out[-1]) is list:
                out[-1].append(text)  # type: ignore[union-attr]
            else:
                out.append([text])
        elif out and type(out[-1]) is bytes:
            out[-1] += message + b"\n\n"  # type: ignore[operator]
        else:
            out.append(message + b"\n\n")
    return out


def _run(strings: list[bytes], template: Template) -> list[Any]:
    """Plain text messages' texts (JSON strings on one line each, several to an item where joined
    with `,\n`) as one `PlainText`, parsed at once; as events one by one if one is not a JSON
    string after all (a number, an escape JSON has not). A raw line break is no part of a JSON
    string: each `,\n` is between two texts, and a text that is one value is a string if it begins so."""
    joined = b",\n".join(strings)
    separators = joined.count(b",\n")
    if joined[:1] == b'"' and separators == joined.count(b',\n"'):
        try:
            texts = _fast_loads(b"[" + joined + b"]")
        except ValueError:
            texts = ()
        if len(texts) == separators + 1:  # one value a text, not two (`"a", "b"`, which JSON has not)
            return [_new_plain(PlainText, (texts, template))]
    head, tail = template.head, template.tail
    return [event for string in joined.split(b",\n") if (event := _object(head + string + tail)) is not None]


def _object(data: bytes) -> dict[str, Any] | None:
    try:
        event = loads(data)  # by orjson when installed; no upstream API sends integers beyond 64 bits
    except ValueError:
        try:  # not UTF-8: read as the text decoder reads it, each bad byte a replacement character
            event = loads(data.decode(errors="replace"))
        except ValueError:
            event = None
    if type(event) is not dict:
        log.warning("skipped an upstream frame that is not a JSON object: %.200s", data.decode(errors="replace"))
        return None
    return event


class SSEData:
    """An SSE byte stream, split anywhere by the network, as whole messages: CR and CRLF line ends
    made LF, each message ending in its blank line. `_data` reads a message's data."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        """The messages that `chunk` completes, with the ones before them that it did not."""
        text = self._pending + chunk if self._pending else chunk
        held = b""
        if b"\r" in text:  # CRLF or CR line ends, made LF; a CR last may be half of a CRLF: held
            if text[-1:] == b"\r":
                text, held = text[:-1], b"\r"
            text = _lf(text)
        end = text.rfind(b"\n\n")
        if end < 0:
            self._pending = text + held
            return b""
        self._pending = text[end + 2 :] + held
        return text[: end + 2]

    def close(self) -> bytes:
        """A message still open at the end of the stream, its blank line added."""
        rest, self._pending = self._pending, b""
        rest = _lf(rest)
        return rest + b"\n\n" if rest.strip(b"\n") else b""


def _lf(text: bytes) -> bytes:
    """`text` with LF line ends (split and joined: faster than `bytes.replace`)."""
    text = b"\n".join(text.split(b"\r\n"))
    return text.replace(b"\r", b"\n") if b"\r" in text else text


def _each_message(region: bytes) -> Iterator[tuple[bytes, int]]:
    """The messages of `region` (whole ones), each with where the next begins; one at a time, as a
    template learned on the way reads the rest."""
    at = 0
    while at < len(region):
        end = region.find(b"\n\n", at)
        end = len(region) if end < 0 else end
        yield region[at:end], end + 2
        at = end + 2


def _data(message: bytes) -> bytes | None:
    """The data of one message (LF line ends, no blank line), None if it has none: several `data:`
    lines joined with a newline; other fields and comments passed over (no gateway reads an
    event's name: each JSON object says its type)."""
    if message[:6] == b"data: " and b"\n" not in message:  # nearly every message: one data line
        return message[6:]
    lines = [line for line in message.split(b"\n") if line[:5] == b"data:" or line == b"data"]
    return b"\n".join(line[6:] if line[5:6] == b" " else line[5:] for line in lines) if lines else None


async def finish_reading(rest: AsyncIterator[Any]) -> None:
    """Read what is left of an answer after its last event, so that its connection goes back to the
    pool for the next turn: a connection whose body was not read to its end is closed, and a new one
    costs a TCP and TLS handshake. An upstream that keeps the body open past `_FINISH_SECONDS`
    keeps its connection closed, as before."""
    try:
        async with asyncio.timeout(_FINISH_SECONDS):
            async for _ in rest:
                pass
    except (TimeoutError, UpstreamError):
        pass
