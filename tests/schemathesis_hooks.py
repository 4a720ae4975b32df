"""What schemathesis cannot read in the spec: request rules that relate one field to another.

The server answers 400 to bodies that are schema-valid but break a rule no JSON Schema states:
- a `tool_choice` naming a function (`{"type": "function", "name": ...}`, or the tools of an
  `allowed_tools` choice) must name a function offered in `tools`, with a valid function name
  (`unknown_tool`);
- a `function_call_output` must answer a `function_call` of the conversation (`function_call_not_found`);
- `background: true` needs the response stored, so not with `store: false` (`invalid_value` / `store`);
- a reasoning item's `encrypted_content`, and a compaction item's, must be a blob the server sealed
  for the caller's key (`invalid_encrypted_content`), which no fuzzer can make.
A fuzzer left alone keeps sending such bodies, so this hook makes every schema-valid case follow the
rules: it renames invalid function names, offers named functions, adds the missing `function_call`
before an output, keeps a background response stored, drops `encrypted_content` from reasoning
items and leaves compaction items out (their blob is required). Invalid cases are left as they are. Parameters and tool types the document does not define
need no hook: the published document admits them, as the server (by default) does, which ignores
them and names them in `OpenResponses-Ignored`.

Use: `SCHEMATHESIS_HOOKS=tests.schemathesis_hooks schemathesis run ...` from the project root.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import schemathesis

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # FunctionToolParam.name


@schemathesis.hook
def map_case(context, case):
    """Schema-valid cases only (the coverage phase's too); invalid ones are rejected either way."""
    meta = case.meta
    takes_body = "requestBody" in DOCUMENT["paths"][case.operation.path][case.operation.method.lower()]
    if takes_body and (meta is None or meta.generation.mode == schemathesis.GenerationMode.POSITIVE):
        case.body = without_sealed_blobs(stored_when_background(answer_outputs(offer_named_functions(case.body))))
    return case


DOCUMENT = json.loads((Path(__file__).resolve().parents[1] / "generated" / "openapi.json").read_text())


def stored_when_background(body):
    """The body without `store: false` when it asks for background mode (the default stores)."""
    if isinstance(body, dict) and body.get("background") is True and body.get("store") is False:
        return {k: v for k, v in body.items() if k != "store"}
    return body


def without_sealed_blobs(body):
    """The body with no `encrypted_content` on its reasoning input items, and no compaction items."""
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return body
    unsealed = [
        {k: v for k, v in item.items() if k != "encrypted_content"}
        if isinstance(item, dict) and item.get("type") == "reasoning"
        else item
        for item in items
        if not (isinstance(item, dict) and item.get("type") == "compaction")
    ]
    return {**body, "input": unsealed}


def answer_outputs(body):
    """A `function_call` before every `function_call_output` whose call the input does not hold."""
    items = body.get("input") if isinstance(body, dict) and not body.get("previous_response_id") else None
    if not isinstance(items, list):
        return body
    out, calls = [], set()
    for item in items:
        if isinstance(item, dict) and item.get("type") == "function_call":
            calls.add(item.get("call_id"))
        if isinstance(item, dict) and item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            call_id = item.get("call_id")
            if isinstance(call_id, str):
                out.append({"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"})
                calls.add(call_id)
        out.append(item)
    return {**body, "input": out}


def offer_named_functions(body):
    if not isinstance(body, dict) or not isinstance(body.get("tool_choice"), dict):
        return body
    choice = dict(body["tool_choice"])
    named: list[dict] = []
    if choice.get("type") == "function":
        named.append(choice)
    elif choice.get("type") == "allowed_tools" and isinstance(choice.get("tools"), list):
        choice["tools"] = [dict(t) if isinstance(t, dict) else t for t in choice["tools"]]
        named += [t for t in choice["tools"] if isinstance(t, dict) and t.get("type") == "function"]
    tools = body.get("tools")
    if not named or (tools is not None and not isinstance(tools, list)):
        return body
    for i, entry in enumerate(named):
        if isinstance(entry.get("name"), str) and not FUNCTION_NAME.match(entry["name"]):
            entry["name"] = f"fn_{i}"
    offered = {t.get("name") for t in tools or () if isinstance(t, dict) and t.get("type") == "function"}
    wanted = [e["name"] for e in named if isinstance(e.get("name"), str) and e["name"] not in offered]
    added = [{"type": "function", "name": name} for name in dict.fromkeys(wanted)]
    return {**body, "tool_choice": choice, "tools": [*(tools or ()), *added]}
