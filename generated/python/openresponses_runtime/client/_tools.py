"""Function tools from plain Python callables, for the agentic loop.

`Tool(fn)` reads the function's name, its docstring (the first paragraph describes the tool; a
Google-style `Args:` section describes each parameter) and its type hints, and asks pydantic for
the JSON schema of the parameters. Calling the tool validates the model's JSON arguments against
the same model before the function sees them.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, create_model

from .. import bindings

__all__ = ["Tool", "as_tool"]

_SECTIONS = ("Args:", "Arguments:", "Parameters:")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class Tool:
    """A function the model may call: its definition for the request, and how to run a call."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        definition: bindings.FunctionTool | Mapping[str, Any] | None = None,
    ):
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        self.arguments = _arguments_model(fn, arg_docs)
        if definition is not None:
            self.definition = _definition_dict(definition)
        else:
            schema = self.arguments.model_json_schema()
            schema.pop("title", None)
            self.definition = {
                "type": "function",
                "name": name or fn.__name__,
                "description": description if description is not None else summary,
                "parameters": schema,
            }
        self.name: str = self.definition["name"]

    @classmethod
    def from_definition(cls, definition: bindings.FunctionTool | Mapping[str, Any], fn: Callable[..., Any]) -> Tool:
        """An explicit `FunctionTool` definition, run by `fn` (whose arguments are still validated)."""
        return cls(fn, definition=definition)

    def parse(self, arguments: str) -> dict[str, Any]:
        """The call's JSON arguments validated into keyword arguments; raises ValueError if they do not fit."""
        parsed = self.arguments.model_validate_json(arguments or "{}")
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    def call(self, arguments: str) -> Any:
        """Run the function on a call's arguments (blocking; an async function runs in its own loop)."""
        result = self.fn(**self.parse(arguments))
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return result

    async def acall(self, arguments: str) -> Any:
        """Run the function on a call's arguments; a sync function runs in a worker thread."""
        if self.is_async:
            return await self.fn(**self.parse(arguments))
        return await asyncio.to_thread(self.call, arguments)


def as_tool(value: Tool | Callable[..., Any]) -> Tool:
    if isinstance(value, Tool):
        return value
    if callable(value):
        return Tool(value)
    raise TypeError(
        f"a tool is a callable or a Tool (Tool.from_definition(definition, fn) for an explicit definition), "
        f"not {type(value).__name__}"
    )


def output_text(value: Any) -> str:
    """A tool's return value as the string the model reads: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json(by_alias=True)
    return pydantic_core.to_json(value).decode()


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _definition_dict(definition: Any) -> dict[str, Any]:
    if isinstance(definition, BaseModel):
        definition = definition.model_dump(mode="json", by_alias=True, exclude_none=True)
    definition = dict(definition)
    if definition.get("type") != "function" or not isinstance(definition.get("name"), str):
        raise ValueError("an explicit tool definition needs type 'function' and a name")
    return definition


def _arguments_model(fn: Callable[..., Any], docs: dict[str, str]) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        hints = {}
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, Field(default, description=docs.get(param.name)))
    name = "".join(part.title() for part in fn.__name__.split("_")) + "Arguments"
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and each parameter's description from an `Args:` section."""
    first = doc.split("\n\n", 1)[0].strip()
    summary = "" if first in _SECTIONS else " ".join(first.split())
    args: dict[str, str] = {}
    lines = iter(doc.splitlines())
    for line in lines:
        if line.strip() in _SECTIONS:
            break
    entry_indent, current = None, None
    for line in lines:
        if not line.strip():
            break
        indent = len(line) - len(line.lstrip())
        entry_indent = indent if entry_indent is None else entry_indent
        match = _ARG_LINE.match(line)
        if indent < entry_indent:
            break
        if indent == entry_indent and match:
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}"
    return summary, args
