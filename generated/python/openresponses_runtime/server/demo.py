"""A small deterministic model for demos, tests and benchmarks: it echoes.

- It answers the last user message with `You said: <text>` in word-sized chunks (and says how
  many images came with it).
- When the message shares a word with a function tool the request offers (a word of its name,
  split at `_`, or of its description: "weather" calls `get_weather`), and `tool_choice` allows
  it, it calls each such tool (only the first with `parallel_tool_calls: false`) with JSON
  arguments built from the tool's parameter schema; under `required` (or a forced function) it
  calls the first allowed tool anyway. Short and common words ("the", "get") never count. The
  arguments are a valid instance of the tool's parameter schema (`instances.instance_of`).
- With a `json_schema` text format it answers a valid instance of that schema, as JSON.
- After a `function_call_output` it reports what the function returned.
- With `reasoning` requested it first emits a reasoning summary.
- It stops `incomplete` when the answer would exceed `max_output_tokens` (one chunk, one token).
- A message containing "refuse" gets a refusal.
- It counts a request's input tokens as one per four characters of its input items' JSON (at
  least one), the `usage.input_tokens` it reports for the response; instructions and tools are
  not counted, so a count is the same however they change.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from .compaction import default_compaction
from .instances import instance_of
from .steps import (
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    MessageEnd,
    MessageStart,
    ProviderRequest,
    ReasoningSummary,
    Refusal,
    Step,
    TextDelta,
    UsageReport,
)
from .wire import dumps

__all__ = ["DemoProvider", "chunks", "tools_matching"]

_CHUNK = re.compile(r"\S+\s*|\s+")
_WORD = re.compile(r"[a-z0-9]+")
# Words too common to say which tool a message is about.
# A line of words reads better than a literal of one word a line.
_STOPWORDS = frozenset(
    "a an and are can current for from get give how in is it its like me my of on or set show "  # noqa: SIM905
    "tell that the this to use what whats when where which with you your".split()
)


def _words(text: str) -> set[str]:
    """The distinctive lower-case words of `text` (`get_weather` gives {"weather"})."""
    return {w for w in _WORD.findall(text.lower().replace("_", " ")) if len(w) > 2 and w not in _STOPWORDS}


def tools_matching(text: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools, in request order, whose name or description shares a distinctive word with `text`."""
    said = _words(text)
    return [tool for tool in tools if said & _words(f"{tool.get('name', '')} {tool.get('description') or ''}")]


def chunks(text: str) -> list[str]:
    """`text` cut into word-sized pieces that join back to exactly `text`."""
    return _CHUNK.findall(text) or [text]


def _text_of(content: Any) -> tuple[str, int]:
    if isinstance(content, str):
        return content, 0
    texts, images = [], 0
    for part in content or ():
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("input_text", "output_text", "text"):
            texts.append(str(part.get("text", "")))
        elif part.get("type") == "input_image":
            images += 1
    return " ".join(texts), images


def _json_schema_asked(request: ProviderRequest) -> dict[str, Any] | None:
    """The schema of a `json_schema` text format, when the request asks for one."""
    text_format = getattr(getattr(request.body, "text", None), "format", None)
    if getattr(text_format, "type", None) != "json_schema":
        return None
    schema = getattr(text_format, "schema_", None)
    return schema if isinstance(schema, dict) else {}


def _count(items: list[dict[str, Any]]) -> int:
    """About four bytes of JSON a token; by orjson, as the history of a long chain is counted every turn."""
    return max(1, len(dumps(items)) // 4)


class DemoProvider:
    """An echo model. `delay`: seconds to sleep between chunks, for realistic streams."""

    def __init__(self, *, delay: float = 0.0):
        self.delay = delay

    async def respond(self, request: ProviderRequest) -> AsyncIterator[Step]:
        last = request.input[-1] if request.input else {}
        user_text, images = "", 0
        for item in reversed(request.input):
            if item.get("type", "message") == "message" and item.get("role") == "user":
                user_text, images = _text_of(item.get("content"))
                break
        budget = request.max_output_tokens
        used = 0
        input_tokens = _count(request.input)

        if request.reasoning is not None:
            summary = f"The user wrote {len(user_text.split())} words; the demo model echoes them."
            yield ReasoningSummary(summary)
            used += len(chunks(summary))

        # Under `required` it calls a tool even right after a function's output.
        if last.get("type") == "function_call_output" and request.tool_choice != "required":
            output = last.get("output")
            answer = f"The function returned: {output if isinstance(output, str) else json.dumps(output)}"
        else:
            tools = self._pick_tools(request, user_text)
            if tools:
                for tool in tools:
                    arguments = json.dumps(instance_of(tool.get("parameters") or {"type": "object"}, tool["name"]))
                    yield FunctionCallStart(tool["name"])
                    for piece in chunks(arguments):
                        yield ArgumentsDelta(piece)
                    yield FunctionCallEnd()
                    used += len(chunks(arguments))
                yield UsageReport(input_tokens, used)
                return
            if "refuse" in user_text.lower():
                yield Refusal("I can't help with that.")
                yield UsageReport(input_tokens, used + 5)
                return
            seen = f" and {images} image{'s' if images != 1 else ''}" if images else ""
            answer = f"You said{seen}: {user_text}" if user_text else "Hello! Send me some text and I will echo it."

        schema = _json_schema_asked(request)
        if schema is not None:  # what it would have said, in the shape asked for
            answer = json.dumps(instance_of(schema, "answer"))
        yield MessageStart(phase="final_answer")
        for piece in chunks(answer):
            if budget is not None and used >= budget:
                yield UsageReport(input_tokens, used)
                yield Incomplete("max_output_tokens")
                return
            if self.delay:
                await asyncio.sleep(self.delay)
            yield TextDelta(piece)
            used += 1
        yield MessageEnd()
        yield UsageReport(input_tokens, used)

    @staticmethod
    def _pick_tools(request: ProviderRequest, text: str) -> list[dict[str, Any]]:
        tools = [t for name, t in request.function_tools.items() if name in request.allowed_tools]
        if not tools:  # most requests: no words to match
            return []
        named = tools_matching(text, tools)
        if not named and request.tool_choice == "required" and tools:
            named = tools[:1]
        parallel = getattr(request.body, "parallel_tool_calls", None) is not False
        return named if parallel else named[:1]

    async def compact(self, items: list[dict[str, Any]], *, model: str, instructions: str | None) -> list[dict]:
        return default_compaction(items)

    async def count_input_tokens(self, request: ProviderRequest) -> int:
        return _count(request.input)
