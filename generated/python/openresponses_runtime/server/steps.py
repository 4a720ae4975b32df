"""What a provider yields: a few high-level steps, turned into spec-exact events by the emitter.

A provider never deals with sequence numbers, indexes, item ids or the order of bracket events:

    async def respond(request: ProviderRequest) -> AsyncIterator[Step]:
        yield TextDelta("Hello")          # opens an assistant message if none is open
        yield TextDelta(", world")
        yield MessageEnd()                # optional: the next item or the end closes it
        yield FunctionCallStart("get_weather")
        yield ArgumentsDelta('{"city": "Paris"}')
        yield FunctionCallEnd()

Starting an item closes the one before it, and the end of the provider closes whatever is
still open, so the only ordering mistake left (an `ArgumentsDelta` with no open call, say) is
reported as a `ProviderError` naming the step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from .. import bindings

__all__ = [
    "Accepted",
    "ArgumentsDelta",
    "FunctionCallEnd",
    "FunctionCallStart",
    "Incomplete",
    "MessageEnd",
    "MessageStart",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningSummary",
    "Refusal",
    "Step",
    "TextDelta",
    "UsageReport",
    "VendorItem",
]


class ProviderError(Exception):
    """A provider yielded steps in an order that cannot be turned into a valid stream."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """The turn is under way: the server may begin the stream (`response.created`) before any
    output, so a model that thinks long never looks like a dead connection. It adds no event,
    and a failure after it ends the stream with `error` and `response.failed` instead of an
    HTTP error status."""


@dataclass(frozen=True, slots=True)
class MessageStart:
    """Open an assistant message (closing any open item). `phase`: `commentary` or `final_answer`."""

    phase: str | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """More text for the open message's text part; opens a message and a part when needed."""

    text: str


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """Close the open message."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """The model declines: a `refusal` part in the open message (or in a new one)."""

    text: str


@dataclass(frozen=True, slots=True)
class FunctionCallStart:
    """Open a call to the function tool `name`; `call_id` is generated when omitted."""

    name: str
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ArgumentsDelta:
    """More of the open call's JSON arguments."""

    delta: str


@dataclass(frozen=True, slots=True)
class FunctionCallEnd:
    """Close the open function call."""


@dataclass(frozen=True, slots=True)
class ReasoningSummary:
    """A reasoning item whose summary is `text` (one summary part).

    `encrypted_content`: the provider's own opaque state (an upstream's signature, say). The client
    never sees it: when it asks for `reasoning.encrypted_content`, the server seals it with the
    summary (see `sealing`), and hands it back as the item's `encrypted_content` when the client
    returns the item."""

    text: str
    encrypted_content: str | None = None


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """More of the model's raw reasoning, streamed as it arrives: a `reasoning_text` part of a
    reasoning item (opened when needed; the next item or the end closes it)."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningEnd:
    """Close the open reasoning item, keeping `encrypted_content` (say, a signature the upstream
    wants back in the next turn). With no reasoning open, it makes one with no text: reasoning the
    upstream keeps hidden, such as Anthropic's redacted thinking."""

    encrypted_content: str | None = None


@dataclass(frozen=True, slots=True)
class VendorItem:
    """A finished vendor item such as `{"type": "myco:web_search_call", ...}`; `id`/`status` are filled in."""

    item: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Token counts for the response's `usage` (the last one reported wins)."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Incomplete:
    """Stop here: the open item and the response end `incomplete` with this reason."""

    reason: str = "max_output_tokens"


Step: TypeAlias = (
    Accepted
    | MessageStart
    | TextDelta
    | MessageEnd
    | Refusal
    | FunctionCallStart
    | ArgumentsDelta
    | FunctionCallEnd
    | ReasoningSummary
    | ReasoningDelta
    | ReasoningEnd
    | VendorItem
    | UsageReport
    | Incomplete
)


@dataclass
class ProviderRequest:
    """Everything a provider needs for one turn, already validated and resolved.

    `input` is the full context as JSON items: the items of every earlier turn of the
    `previous_response_id` chain (each turn's input, then its output), then this request's input.
    A string input arrives as one user message, and a reasoning item a client carried back (its
    sealed `encrypted_content`) as the item the provider produced (see `sealing`). `allowed_tools` is the set of function names the
    model may call under `tool_choice`; calls to any other name are suppressed by the server.
    `ignored` names what the server left out of the request (see `acceptance`): `parameter:<name>`,
    `tool:<type>` or `item:<type>.<field>`; a provider may add to it before its first step (a
    gateway names what its upstream would refuse); `tools` holds only what the model can be offered.
    """

    response_id: str
    model: str
    input: list[dict[str, Any]]
    instructions: str | None
    tools: list[dict[str, Any]]
    tool_choice: Literal["auto", "none", "required"]
    allowed_tools: frozenset[str]
    max_output_tokens: int | None
    reasoning: dict[str, Any] | None
    body: bindings.CreateBody | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()

    @property
    def function_tools(self) -> dict[str, dict[str, Any]]:
        """The request's function tools by name."""
        return {t["name"]: t for t in self.tools if t.get("type") == "function" and isinstance(t.get("name"), str)}


class Provider(Protocol):
    """A model behind the server. `respond` is an async generator of steps.

    Optional: `compact` (else the server's own compaction), `count_input_tokens` (else
    `POST /responses/input_tokens` answers 501), and a method for each operation the runtime leaves
    to the provider (`stubs.Stubs`, each 501 until defined).
    """

    def respond(self, request: ProviderRequest) -> AsyncIterator[Step]: ...

    async def compact(self, items: list[dict[str, Any]], *, model: str, instructions: str | None) -> list[dict]:
        """The conversation `items` shortened (typically to a `compaction` item plus recent turns)."""
        ...

    async def count_input_tokens(self, request: ProviderRequest) -> int:
        """The tokens `request` would take as the model's input (its context, instructions and tools)."""
        ...
