"""The agentic loop: call the model, run the functions it calls, send their outputs back, repeat.

`Loop` holds the conversation and decides what each turn sends; the sync and async clients only
drive it (run the calls in a thread pool, or gather them). A turn continues from the previous
response by `previous_response_id`, or, with `store=False`, resends the whole conversation. A tool
that raises, gets arguments it cannot take, or is not known becomes an error string in its output,
and the loop goes on: the model reads the error and may recover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from .. import bindings
from ._config import jsonable
from ._tools import Tool, as_tool, output_text

__all__ = ["Loop", "RunResult", "ToolCall", "response_text"]


@dataclass
class ToolCall:
    """One function call the model made, and what it got back."""

    name: str
    call_id: str
    arguments: str
    output: str
    error: bool = False


@dataclass
class RunResult:
    """What `responses.run` did: every turn's response, the calls made, and why it stopped.

    `stopped` is `"completed"` when the last response called no tools, `"max_turns"` when the
    loop ran out of turns with calls still unanswered (they are in `pending_calls`).
    """

    responses: list[bindings.ResponseObject] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    stopped: Literal["completed", "max_turns"] = "completed"
    pending_calls: list[Any] = field(default_factory=list)

    @property
    def final_response(self) -> bindings.ResponseObject:
        return self.responses[-1]

    @property
    def output_text(self) -> str:
        """The text of the last response's messages."""
        return response_text(self.final_response) if self.responses else ""

    @property
    def completed(self) -> bool:
        return self.stopped == "completed"


def response_text(response: bindings.ResponseObject) -> str:
    """The `output_text` parts of a response's messages, joined."""
    parts = []
    for item in response.output:
        if getattr(item, "type", None) == "message":
            for part in getattr(item, "content", None) or ():
                if getattr(part, "type", None) == "output_text":
                    parts.append(part.text)
    return "".join(parts)


class Loop:
    """The state of one agentic run."""

    def __init__(
        self,
        input: str | Sequence[Any],
        tools: Iterable[Tool | Callable[..., Any]],
        max_turns: int,
        params: Mapping[str, Any],
    ):
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.tools = {tool.name: tool for tool in map(as_tool, tools)}
        self.max_turns = max_turns
        self.params = dict(params)
        self.resend = self.params.get("store") is False
        history = [{"type": "message", "role": "user", "content": input}] if isinstance(input, str) else input
        self.history: list[Any] = list(jsonable(list(history)))
        self.next_input: Any = input
        self.result = RunResult()
        if self.tools:
            self.params["tools"] = [tool.definition for tool in self.tools.values()]

    def request(self) -> dict[str, Any]:
        """The keywords of this turn's `create`."""
        return {**self.params, "input": self.next_input}

    def calls(self, response: bindings.ResponseObject) -> list[Any]:
        """Record a turn's response; the function calls still to run (none when the loop is over)."""
        self.result.responses.append(response)
        calls = [item for item in response.output if getattr(item, "type", None) == "function_call"]
        if not calls:
            self.result.stopped = "completed"
            return []
        if len(self.result.responses) >= self.max_turns:
            self.result.stopped = "max_turns"
            self.result.pending_calls = calls
            return []
        return calls

    def tool(self, call: Any) -> Tool | None:
        return self.tools.get(call.name)

    def unknown(self, call: Any) -> ToolCall:
        known = ", ".join(sorted(self.tools)) or "none"
        return ToolCall(
            call.name, call.call_id, call.arguments, f"Error: no tool named {call.name!r} (tools: {known})", True
        )

    def outcome(self, call: Any, value: Any = None, exc: BaseException | None = None) -> ToolCall:
        """A call's record from its return value or the exception it raised."""
        if exc is None:
            return ToolCall(call.name, call.call_id, call.arguments, output_text(value))
        if isinstance(exc, ValidationError):
            message = f"Error: the arguments do not fit {call.name}: {exc.error_count()} problem(s): " + "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
        else:
            message = f"Error: {type(exc).__name__}: {exc}"
        return ToolCall(call.name, call.call_id, call.arguments, message, True)

    def advance(self, response: bindings.ResponseObject, done: list[ToolCall]) -> None:
        """Queue the outputs of a turn's calls, in call order, as the next turn's input."""
        self.result.tool_calls.extend(done)
        outputs = [{"type": "function_call_output", "call_id": c.call_id, "output": c.output} for c in done]
        if self.resend:
            self.history += [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in response.output]
            self.history += outputs
            self.next_input = list(self.history)
        else:
            self.params["previous_response_id"] = response.id
            self.next_input = outputs
