"""The response object a request starts: every field the spec gives a response, in its order,
echoing the request's settings, with a default for each setting the request left out.

The fields and the defaults the spec declares come from the generated `skeleton`; where the
spec leaves a default open, `SERVER_DEFAULTS` holds this server's choice.
"""

from __future__ import annotations

import time
from typing import Any

from . import skeleton

__all__ = ["SETTING_DEFAULTS", "input_items", "response_skeleton"]


def _echo_tool(tool: dict[str, Any]) -> dict[str, Any]:
    if tool.get("type") == "function":
        return {
            "type": "function",
            "name": tool.get("name"),
            "description": tool.get("description"),
            "parameters": tool.get("parameters"),
            "strict": tool.get("strict"),
        }
    return dict(tool)


def _echo_tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "name": choice.get("name")}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        return {
            "type": "allowed_tools",
            "tools": [{"type": "function", "name": t.get("name")} for t in choice.get("tools") or ()],
            "mode": choice.get("mode") or "auto",
        }
    return choice


def _echo_format(fmt: Any) -> dict[str, Any]:
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return {"type": "text"}
    if fmt.get("type") == "json_schema":
        return {
            "type": "json_schema",
            "name": fmt.get("name") or "response",
            "description": fmt.get("description"),
            "schema": fmt.get("schema") if isinstance(fmt.get("schema"), dict) else {},
            "strict": bool(fmt.get("strict")),
        }
    return dict(fmt)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


# This server's choices for the settings whose default the spec leaves open.
SERVER_DEFAULTS: dict[str, Any] = {
    "tool_choice": "auto",
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "truncation": "disabled",
    "parallel_tool_calls": True,
    "verbosity": "medium",
    "top_p": 1.0,
    "temperature": 1.0,
    "top_logprobs": 0,
    "store": True,
    "background": False,
    "service_tier": "auto",
}

# What the response states for a setting the request left out: the default the spec declares
# (`tool_choice`), else this server's own.
SETTING_DEFAULTS: dict[str, Any] = {**SERVER_DEFAULTS, **skeleton.REQUEST_DEFAULTS}


def _echo_text(text: Any) -> dict[str, Any]:
    text = text if isinstance(text, dict) else {}
    verbosity = _or(text.get("verbosity"), SETTING_DEFAULTS["verbosity"])
    return {"format": _echo_format(text.get("format")), "verbosity": verbosity}


def _as_is(value: Any) -> Any:
    return value


# How the response states each request setting it echoes (a setting left out has its `_UNSET` value).
_ECHO: dict[str, Any] = {
    "previous_response_id": _as_is,
    "instructions": _as_is,
    "tools": lambda tools: [_echo_tool(t) for t in tools or () if isinstance(t, dict)],
    "tool_choice": _echo_tool_choice,
    "truncation": _as_is,
    "parallel_tool_calls": _as_is,
    "text": _echo_text,
    "top_p": float,
    "presence_penalty": float,
    "frequency_penalty": float,
    "top_logprobs": _as_is,
    "temperature": float,
    "reasoning": lambda r: {"effort": r.get("effort"), "summary": r.get("summary")} if isinstance(r, dict) else None,
    "max_output_tokens": _as_is,
    "max_tool_calls": _as_is,
    "store": _as_is,
    "background": _as_is,
    "service_tier": lambda tier: "default" if tier == "auto" else tier,
    "metadata": _as_is,
    "safety_identifier": _as_is,
    "prompt_cache_key": _as_is,
}


def _unset() -> dict[str, Any]:
    """The response of a request that sets nothing, in the response's field order (the mutable
    fields are made afresh for each response): what the spec declares, the settings' defaults as
    the response echoes them, else nothing."""
    unset: dict[str, Any] = {}
    for name in skeleton.FIELDS:
        if name == "status":
            unset[name] = "in_progress"
        elif name in skeleton.RESPONSE_DEFAULTS:
            unset[name] = skeleton.RESPONSE_DEFAULTS[name]
        elif name in SETTING_DEFAULTS and name in _ECHO:
            unset[name] = _ECHO[name](SETTING_DEFAULTS[name])
        else:
            unset[name] = None
    return unset


_UNSET = _unset()


def response_skeleton(data: dict[str, Any], response_id: str, model: str) -> dict[str, Any]:
    """A complete `ResponseResource` in status `in_progress`, echoing the request's settings."""
    response = {
        **_UNSET,
        "id": response_id,
        "created_at": int(time.time()),
        "model": model,
        "output": [],
        "tools": [],
        "text": {"format": {"type": "text"}, "verbosity": SETTING_DEFAULTS["verbosity"]},
        "metadata": {},
    }
    for name, value in data.items():
        echo = _ECHO.get(name)
        if echo is not None and value is not None:  # a null sets nothing
            response[name] = echo(value)
    return response


def input_items(value: Any) -> list[dict[str, Any]]:
    """A request's `input` as items: a string becomes one user message."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": value}]}]
    return [dict(item) for item in value if isinstance(item, dict)]
