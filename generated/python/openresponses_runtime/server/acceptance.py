"""What a server accepts from a request: refused, ignored and reported, or honoured.

The models accept anything shaped like the spec, so clients can send what a newer spec or another
vendor defines: an unknown item, content or tool type parses as `UnknownItem` / `UnknownContent` /
`UnknownTool`, and an unknown field stays an extra field. Real clients send such things all the
time (Codex sends `client_metadata`, OpenAI's unprefixed `web_search` tool and a `namespace` of
function tools with every request), so the server is liberal where losing the input does not
change the answer, and says what it left out.

Always refused, in every mode (400, with the exact `param`): input whose loss would change the
answer.

| input | `code` | `param` |
|---|---|---|
| an input item of a type the server does not honour | `unsupported_item_type` | `input[3].type` |
| a content part of a type the server does not honour | `unsupported_content_type` | `input[0].content[1].type` |
| a `function_call_output` whose `call_id` answers no `function_call` of the conversation | `function_call_not_found` | `input` |
| (checked on the tools left after the ones below) a `tool_choice` naming a tool that is not there | `unknown_tool` | `tool_choice.name` |

Ignored and reported by default, refused in strict mode (`create_app(..., strict=True)`):

| input | tolerant | strict: `code` / `param` |
|---|---|---|
| a top-level parameter the spec (with the server's fragments) does not define | left out of `request.body` | `unknown_parameter` / `conversation` |
| a tool of a type the spec does not define | left out of `request.tools` | `unsupported_tool_type` / `tools[4].type` |
| a `namespace` tool | its function tools join `request.tools` under their own names | as any unknown tool type |
| an item the server emits, sent back in its output form, with a field its input form refuses | left out of the item; reported, unless the item's sealed `encrypted_content` brings it back | `invalid_value` / `input[1].content` |

What was ignored is reported three ways: `ProviderRequest.ignored`, the `OpenResponses-Ignored`
response header (WebSocket: the turn's first event's `openresponses:ignored` field), and one
warning log line the first time the server reports a name. Each entry is `parameter:<name>`,
`tool:<type>` or `item:<type>.<field>`, percent-encoded to stay one header token. A request names
at most `MAX_REPORTED` of them (then `+N more`), a name is cut at `MAX_NAME` characters, and a server logs
at most `MAX_LOGGED` different names, so no client can grow a header or a log without bound.

Which names are OpenAI's own is data (`native`, generated from `spec/openai-native.yaml`); the log
line says what such a name is. What the server was built with (the core spec plus its vendor
fragments) is honoured; a provider that handles more says so with `Accept`, passed to
`create_app(..., accept=...)`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from .. import bindings
from .._base import UnknownContent, UnknownItem, UnknownTool
from . import native
from .errors import InvalidRequest

__all__ = ["Accept", "Acceptance", "Admitted", "check_function_outputs", "check_tool_choice"]

log = logging.getLogger("openresponses_runtime.server")

MAX_REPORTED = 16  # entries in one request's report; the rest are counted
MAX_NAME = 64  # characters of a (percent-encoded) name kept in a report or a log line
MAX_LOGGED = 256  # different names one server logs; after that it says it stopped
HEADER = "OpenResponses-Ignored"
WEBSOCKET_FIELD = "openresponses:ignored"


@dataclass(frozen=True)
class Accept:
    """What a provider honours beyond the spec it was built from.

    `input_items`: item `type`s; `content`: content part `type`s; `parameters`: top-level request
    fields (JSON names). Each is accepted as is and handed to the provider in `request.input` or
    `request.body`.
    """

    input_items: frozenset[str] = frozenset()
    content: frozenset[str] = frozenset()
    parameters: frozenset[str] = frozenset()

    def __init__(self, *, input_items: Iterable[str] = (), content: Iterable[str] = (), parameters: Iterable[str] = ()):
        object.__setattr__(self, "input_items", frozenset(input_items))
        object.__setattr__(self, "content", frozenset(content))
        object.__setattr__(self, "parameters", frozenset(parameters))


@dataclass(frozen=True)
class Admitted:
    """A request as the server goes on with it: `data` and `body` without what was ignored
    (and with namespaces' functions as plain function tools), and the report of what that was."""

    data: dict[str, Any]
    body: BaseModel
    ignored: tuple[str, ...] = ()


class Acceptance:
    """One server's policy: `accept` widens what is honoured, `strict` refuses what is not.

    `quiet`: log nothing (for `orspec proxy`, which checks requests on a server's behalf)."""

    def __init__(self, accept: Accept | None = None, *, strict: bool = False, quiet: bool = False):
        self.accept = accept or Accept()
        self.strict = strict
        self.quiet = quiet
        self._logged: set[str] = set()

    def admit(self, data: dict[str, Any], body: BaseModel) -> Admitted:
        """Refuse what must be refused (`InvalidRequest`); leave out, and report, what may be ignored.

        Everything a server checks before it looks at the conversation's history (for that, see
        `check_function_outputs`), so that `orspec proxy` can check a request as a server would."""
        self._check_items(body)
        report = _Report()
        extras = body.__pydantic_extra__ or {}
        unknown = [name for name in extras if name not in self.accept.parameters]
        for name in unknown:
            if self.strict:
                raise InvalidRequest(
                    f"Unknown parameter {name!r}: this server does not support it.",
                    code="unknown_parameter",
                    param=name,
                )
            report.add("parameter", name)
        tools = self._tools(data, body, report)
        data = self._emitted(data, body, report)
        dropped = set(unknown)
        if dropped or tools is not None:
            data = {k: v for k, v in data.items() if k not in dropped}
            body = body.model_copy(update=None if tools is None else {"tools": tools[1]})
            body.__pydantic_extra__ = {k: v for k, v in extras.items() if k not in dropped}
            if tools is not None:
                data["tools"] = tools[0]
        check_tool_choice(data)
        for entry in () if self.quiet else report.new_names(self._logged):
            self._log(entry)
        return Admitted(data, body, report.entries())

    def _check_items(self, body: BaseModel) -> None:
        """Refuse unknown input item and content types: without them the model answers another question."""
        items = getattr(body, "input", None)
        if not isinstance(items, list):
            return
        for i, item in enumerate(items):
            if isinstance(item, UnknownItem):
                if item.type not in self.accept.input_items:
                    raise InvalidRequest(
                        f"Input item type {item.type!r} is not supported by this server.",
                        code="unsupported_item_type",
                        param=f"input[{i}].type",
                    )
                continue
            for field, value in _lists(item):
                for j, part in enumerate(value):
                    if isinstance(part, UnknownContent) and part.type not in self.accept.content:
                        raise InvalidRequest(
                            f"Content part type {part.type!r} is not supported by this server.",
                            code="unsupported_content_type",
                            param=f"input[{i}].{field}[{j}].type",
                        )

    def _emitted(self, data: dict[str, Any], body: BaseModel, report: _Report) -> dict[str, Any]:
        """`data` without the fields `parse_body` validated the input without: fields of an item
        sent back in its output form that the input form refuses.

        A client that keeps the whole history sends back what the server emitted, so that is
        accepted; what the provider needs of it comes back from the sealed `encrypted_content`
        (`sealing.unseal_reasoning`), the rest is reported. Strict mode refuses it."""
        given, parsed = data.get("input"), getattr(body, "input", None)
        if not isinstance(given, list) or not isinstance(parsed, list):
            return data
        conformed = None
        for i, (raw, item) in enumerate(zip(given, parsed, strict=True)):
            if not isinstance(raw, dict) or len(raw) == len(item.model_fields_set) or isinstance(item, UnknownItem):
                continue  # every field given was validated (most items)
            left_out = raw.keys() - _present(item)
            if not left_out:
                continue  # every item but those sent back in their output form
            kind = str(raw.get("type"))
            if self.strict:
                field = min(left_out)
                raise InvalidRequest(
                    f"Invalid value for 'input[{i}].{field}': a {kind} item given as input does not take it.",
                    code="invalid_value",
                    param=f"input[{i}].{field}",
                )
            if conformed is None:
                conformed = list(given)
            conformed[i] = {k: v for k, v in raw.items() if k not in left_out}
            if not (kind == "reasoning" and raw.get("encrypted_content")):  # a sealed item brings them back
                for field in sorted(left_out):
                    report.add("item", f"{kind}.{field}")
        return data if conformed is None else {**data, "input": conformed}

    def _tools(self, data: dict[str, Any], body: BaseModel, report: _Report) -> tuple[list, list] | None:
        """The request's tools as (JSON, models) without unknown types, namespaces opened; None if unchanged."""
        parsed = getattr(body, "tools", None) or ()
        if not any(isinstance(tool, UnknownTool) for tool in parsed):
            return None  # most requests
        raw, kept = [], []
        for i, (tool, given) in enumerate(zip(parsed, data.get("tools") or (), strict=True)):
            if not isinstance(tool, UnknownTool):
                raw.append(given)
                kept.append(tool)
            elif self.strict:
                raise InvalidRequest(
                    f"Unknown tool type {tool.type!r}: this server does not support it.",
                    code="unsupported_tool_type",
                    param=f"tools[{i}].type",
                )
            elif tool.type == "namespace":
                for given_function, function in _namespace_functions(given, f"tools[{i}]", report):
                    raw.append(given_function)
                    kept.append(function)
            else:
                report.add("tool", str(tool.type))
        return raw, kept

    def _log(self, entry: str) -> None:
        if len(self._logged) > MAX_LOGGED:
            return
        if len(self._logged) == MAX_LOGGED:
            self._logged.add("")  # the marker that this line was written
            log.warning("ignored %d different names; no longer logging new ones (see %s)", MAX_LOGGED, HEADER)
            return
        self._logged.add(entry)
        kind, _, name = entry.partition(":")
        if kind == "item":
            why = "an output field that the item's input form does not take"
        else:
            what = (native.PARAMETERS if kind == "parameter" else native.TOOL_TYPES).get(name)
            why = f"OpenAI: {what}" if what else "not in this server's spec"
        log.warning(
            "ignored %s %s (%s); logged once, named in the %s header of every response that ignores it",
            kind,
            name,
            why,
            HEADER,
        )


class _Report:
    """What one request had ignored, in order, each once, capped."""

    def __init__(self):
        self._entries: dict[str, None] = {}
        self.more = 0

    def add(self, kind: str, name: str) -> None:
        entry = f"{kind}:{_shown(name)}"
        if entry in self._entries:
            return
        if len(self._entries) < MAX_REPORTED:
            self._entries[entry] = None
        else:
            self.more += 1

    def new_names(self, logged: set[str]) -> list[str]:
        return [entry for entry in self._entries if entry not in logged]

    def entries(self) -> tuple[str, ...]:
        return (*self._entries, *([f"+{self.more} more"] if self.more else []))


def _shown(name: str) -> str:
    """`name` as one header token: percent-encoded, at most `MAX_NAME` characters."""
    shown = quote(name[: MAX_NAME + 1], safe=":_-.~")
    if len(shown) <= MAX_NAME:
        return shown
    cut = shown[: MAX_NAME - 3]
    cut = cut[: cut.rfind("%")] if "%" in cut[-2:] else cut  # no half escape
    return cut + "..."


def _namespace_functions(tool: Any, at: str, report: _Report) -> Iterable[tuple[dict[str, Any], BaseModel]]:
    """The function tools of a `namespace` tool, as OpenAI offers them: each under its own name.

    Other tools in it (OpenAI also allows `custom`) are reported like any unknown tool type."""
    functions = tool.get("tools") if isinstance(tool, dict) else None
    if not isinstance(functions, list):
        raise InvalidRequest(
            f"Invalid value for '{at}.tools': a namespace holds a list of function tools.",
            code="invalid_value",
            param=f"{at}.tools",
        )
    for j, function in enumerate(functions):
        kind = function.get("type") if isinstance(function, dict) else None
        if kind != "function" or bindings.FunctionTool is None:  # a tool the spec does not define
            report.add("tool", str(kind))
            continue
        try:
            yield function, bindings.FunctionTool.model_validate_json(json.dumps(function), strict=True)
        except ValidationError as exc:
            error = exc.errors(include_url=False, include_context=False, include_input=False)[0]
            where = ".".join(str(step) for step in error["loc"])
            param = f"{at}.tools[{j}]" + (f".{where}" if where else "")
            raise InvalidRequest(
                f"Invalid value for '{param}': {error['msg']}.", code="invalid_value", param=param
            ) from None


def _present(item: BaseModel) -> set[str]:
    """The names of the fields an item was given with, extra fields included (pydantic counts an
    extra field spelt like a field's Python name as that field: both names are kept)."""
    fields = type(item).model_fields
    present = set(item.__pydantic_extra__ or ())
    for name in item.model_fields_set:
        present.add(name)
        if name in fields and fields[name].alias:
            present.add(fields[name].alias)
    return present


def _lists(item: BaseModel) -> Iterable[tuple[str, list]]:
    """(JSON name, value) of every list-valued field of an item: its content parts live in these."""
    for name, info in type(item).model_fields.items():
        value = getattr(item, name, None)
        if isinstance(value, list):
            yield info.alias or name, value


def check_function_outputs(own_input: list[dict[str, Any]], history: list[dict[str, Any]]) -> None:
    """Every `function_call_output` answers a `function_call` of the conversation so far.

    The calls are those of the `previous_response_id` chain (`history`) and of this turn's input.
    """
    if not any(item.get("type") == "function_call_output" for item in own_input):
        return  # nothing to answer for (most turns): no need to collect the calls
    calls = {
        item.get("call_id")
        for item in (*history, *own_input)
        if isinstance(item, dict) and item.get("type") == "function_call"
    }
    for item in own_input:
        if item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            raise InvalidRequest(
                f"No function call found for the function_call_output with call_id {item.get('call_id')!r}.",
                code="function_call_not_found",
                param="input",
            )


def check_tool_choice(data: dict[str, Any]) -> None:
    """`tool_choice` asks for what `tools` (as admitted) offers."""
    choice = data.get("tool_choice")
    if choice != "required" and not isinstance(choice, dict):
        return  # `auto`, `none` or left out: nothing to check against the tools
    names = {t.get("name") for t in data.get("tools") or () if isinstance(t, dict) and t.get("type") == "function"}
    if choice == "required" and not names:
        # Only function calls satisfy `required` (see `ToolPolicy`): without one it cannot be met.
        raise InvalidRequest(
            "tool_choice is 'required' but tools offers no function the model could call.",
            code="invalid_value",
            param="tool_choice",
        )
    if not isinstance(choice, dict):
        return
    if choice.get("type") == "function" and choice.get("name") not in names:
        raise InvalidRequest(
            f"tool_choice names the function {choice.get('name')!r}, which is not in tools.",
            code="unknown_tool",
            param="tool_choice.name",
        )
    if choice.get("type") == "allowed_tools":
        for i, tool in enumerate(choice.get("tools") or ()):
            if isinstance(tool, dict) and tool.get("name") not in names:
                raise InvalidRequest(
                    f"allowed_tools names the function {tool.get('name')!r}, which is not in tools.",
                    code="unknown_tool",
                    param=f"tool_choice.tools[{i}].name",
                )
