"""What a server refuses rather than silently ignores.

The models accept anything shaped like the spec, so clients can send what a newer spec or another
vendor defines: an unknown item or content type parses as `UnknownItem` / `UnknownContent`, and an
unknown field stays an extra field. A server that quietly drops such input answers a question it
was not asked, so before the provider runs, a request is refused (400, with the exact `param`) when:

| input | `code` | `param` |
|---|---|---|
| an input item of a type the server does not honour | `unsupported_item_type` | `input[3].type` |
| a content part of a type the server does not honour | `unsupported_content_type` | `input[0].content[1].type` |
| a top-level parameter the spec (with the server's vendor fragments) does not define | `unknown_parameter` | `conversation` |
| a `function_call_output` whose `call_id` answers no `function_call` of the conversation | `function_call_not_found` | `input` |

What the server was built with (the core spec plus its vendor fragments) is honoured; a provider
that handles more says so with `Accept`, passed to `create_app(..., accept=...)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .._base import UnknownContent, UnknownItem
from .errors import InvalidRequest

__all__ = ["Accept", "check_function_outputs", "check_request"]


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

    def __init__(
        self, *, input_items: Iterable[str] = (), content: Iterable[str] = (), parameters: Iterable[str] = ()
    ):
        object.__setattr__(self, "input_items", frozenset(input_items))
        object.__setattr__(self, "content", frozenset(content))
        object.__setattr__(self, "parameters", frozenset(parameters))


def check_request(body: BaseModel, accept: Accept) -> None:
    """Refuse unknown top-level parameters and unknown input item or content types."""
    for name in body.__pydantic_extra__ or {}:
        if name not in accept.parameters:
            raise InvalidRequest(
                f"Unknown parameter {name!r}: this server does not support it.", code="unknown_parameter", param=name
            )
    items = getattr(body, "input", None)
    if not isinstance(items, list):
        return
    for i, item in enumerate(items):
        if isinstance(item, UnknownItem):
            if item.type not in accept.input_items:
                raise InvalidRequest(
                    f"Input item type {item.type!r} is not supported by this server.",
                    code="unsupported_item_type",
                    param=f"input[{i}].type",
                )
            continue
        for field, value in _lists(item):
            for j, part in enumerate(value):
                if isinstance(part, UnknownContent) and part.type not in accept.content:
                    raise InvalidRequest(
                        f"Content part type {part.type!r} is not supported by this server.",
                        code="unsupported_content_type",
                        param=f"input[{i}].{field}[{j}].type",
                    )


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
        item.get("call_id") for item in (*history, *own_input) if isinstance(item, dict) and item.get("type") == "function_call"
    }
    for item in own_input:
        if item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            raise InvalidRequest(
                f"No function call found for the function_call_output with call_id {item.get('call_id')!r}.",
                code="function_call_not_found",
                param="input",
            )
