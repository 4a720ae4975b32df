"""What schemathesis cannot read in the spec: a request's `tool_choice` may only name offered functions.

`tool_choice: {"type": "function", "name": ...}` and the tools of an `allowed_tools` choice must name
a function in `tools`, which must itself have a valid function name. The spec says so in words
(the server answers 400 `unknown_tool` otherwise), and no JSON Schema can relate two fields like
that, so a fuzzer left alone keeps sending schema-valid bodies that no server may accept. This
hook makes every schema-valid generated body follow the rule: a named function that is not a valid function
name is renamed, and a function that is not offered is added to `tools`.
Use: `SCHEMATHESIS_HOOKS=tests.schemathesis_hooks schemathesis run ...` from the project root.
"""

from __future__ import annotations

import re

import schemathesis

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # FunctionToolParam.name


@schemathesis.hook
def map_case(context, case):
    """Schema-valid cases only (the coverage phase's too); invalid ones are rejected either way."""
    meta = case.meta
    if meta is None or meta.generation.mode == schemathesis.GenerationMode.POSITIVE:
        case.body = offer_named_functions(case.body)
    return case


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
