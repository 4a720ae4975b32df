"""Code samples for an operation, made from the request examples the spec gives it.

Each named example of an operation's JSON request body (or, for an operation without a body, the
call itself) becomes a curl command, a program for orspec's Python client
(`openresponses_runtime.client`), one for the openai Python SDK, one for the generated TypeScript
client (the `openresponses-runtime` npm package) and one for openai-node (plain ES module
JavaScript, so they run as they are and type-check as TypeScript). All read the server's base URL
(ending in `/v1`) and key from `$OPENRESPONSES_BASE_URL` and `$OPENRESPONSES_API_KEY`, and a path
parameter from the variable of its name in capitals (`$RESPONSE_ID`), so they run unchanged against
any server; the tests run them against `orspec serve`. The SDKs' method for each operation is named
here, since the spec does not say it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# operationId -> the method of `client.responses` in the Python clients (orspec's and openai's) and
# in the JavaScript ones (the generated TypeScript client and openai-node).
SDK_METHODS = {
    "createResponse": ("create", "create"),
    "compactResponse": ("compact", "compact"),
    "getResponse": ("retrieve", "retrieve"),
    "deleteResponse": ("delete", "delete"),
    "cancelResponse": ("cancel", "cancel"),
    "listInputItems": ("input_items.list", "inputItems.list"),
    "countInputTokens": ("input_tokens.count", "inputTokens.count"),
}
# The generated TypeScript client has no method of its own for these; it sends them with `request`.
TYPESCRIPT_REQUESTS = {"compactResponse"}


@dataclass(frozen=True)
class Sample:
    example: str  # the example's name in the spec
    summary: str
    label: str  # curl | Python | openai (Python) | TypeScript | openai-node
    language: str  # the code fence's language
    code: str
    streams: bool


def samples(
    operation_id: str, method: str, path: str, examples: list[tuple[str, str, Any]], path_params: list[str] = ()
) -> list[Sample]:
    """The samples of one operation: five per example of its request body, or five of the call
    alone when it takes no body (`examples` holds the one `("", "", None)`)."""
    out = []
    names = SDK_METHODS.get(operation_id)
    ids = list(path_params)
    for name, summary, body in examples:
        streams = isinstance(body, dict) and body.get("stream") is True
        out.append(Sample(name, summary, "curl", "sh", _curl(method, path, body, streams), streams))
        if names:
            python, js = names
            out.append(Sample(name, summary, "Python", "python", _python(python, ids, body, streams), streams))
            out.append(
                Sample(name, summary, "openai (Python)", "python", _openai_python(python, ids, body, streams), streams)
            )
            if operation_id in TYPESCRIPT_REQUESTS:
                code = _typescript_request(method, path, body)
            else:
                code = _typescript(js, ids, body, streams)
            out.append(Sample(name, summary, "TypeScript", "js", code, streams))
            out.append(Sample(name, summary, "openai-node", "js", _openai_node(js, ids, body, streams), streams))
    return out


def variable(param: str) -> str:
    """The environment variable a sample reads a path parameter from: `response_id` -> `RESPONSE_ID`."""
    return re.sub(r"[^A-Za-z0-9]", "_", param).upper()


def _curl(method: str, path: str, body: Any, streams: bool) -> str:
    flags = "-sS -N" if streams else "-sS"
    url = re.sub(r"\{([^}]+)\}", lambda m: "$" + variable(m.group(1)), path)
    lines = [
        f'curl {flags} -X {method.upper()} "$OPENRESPONSES_BASE_URL{url}"',
        '  -H "Authorization: Bearer $OPENRESPONSES_API_KEY"',
    ]
    if body is not None:
        data = json.dumps(body, indent=2, ensure_ascii=False).replace("'", "'\\''")
        lines += ['  -H "Content-Type: application/json"', f"  -d '{data}'"]
    return " \\\n".join(lines) + "\n"


def _arguments(ids: list[str], body: Any, python: bool) -> tuple[str, str]:
    """(lines reading the path parameters and the body, the call's arguments)."""
    lines = []
    for param in ids:
        read = f'os.environ["{variable(param)}"]' if python else f"process.env.{variable(param)}"
        lines.append(f"{param} = {read}\n" if python else f"const {_camel(param)} = {read};\n")
    args = list(ids) if python else [_camel(p) for p in ids]
    if body is not None:
        lines.append(
            f"body = {_python_literal(body)}\n"
            if python
            else f"const body = {json.dumps(body, indent=2, ensure_ascii=False)};\n"
        )
        args.append("**body" if python else "body")
    return "".join(lines), ", ".join(args)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _python_literal(value: Any, depth: int = 0) -> str:
    """`value` as a Python literal, laid out as `json.dumps(indent=4)` lays out JSON."""
    pad, inner = "    " * depth, "    " * (depth + 1)
    if isinstance(value, dict) and value:
        rows = [
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {_python_literal(v, depth + 1)}" for k, v in value.items()
        ]
        return "{\n" + ",\n".join(rows) + f",\n{pad}}}"
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(f"{inner}{_python_literal(v, depth + 1)}" for v in value) + f",\n{pad}]"
    if isinstance(value, bool) or value is None:
        return repr(value)
    return json.dumps(value, ensure_ascii=False)  # strings, numbers, {} and []: the same in Python


def _python(sdk: str, ids: list[str], body: Any, streams: bool) -> str:
    lines, args = _arguments(ids, body, python=True)
    head = (
        ("import os\n\n" if ids else "")
        + "from openresponses_runtime.client import Client\n\n"
        + "client = Client()  # $OPENRESPONSES_BASE_URL and $OPENRESPONSES_API_KEY\n"
        + lines
    )
    if streams:
        return head + (
            f"with client.responses.{sdk}({args}) as stream:\n"
            "    for event in stream:\n"
            "        print(event.type)\n"
            "    response = stream.final_response()\n"
            "print(response.status)\n"
        )
    return head + f"answer = client.responses.{sdk}({args})\nprint(answer.model_dump_json(indent=2))\n"


def _openai_python(sdk: str, ids: list[str], body: Any, streams: bool) -> str:
    lines, args = _arguments(ids, body, python=True)
    head = (
        "import os\n\n"
        "from openai import OpenAI\n\n"
        'client = OpenAI(base_url=os.environ["OPENRESPONSES_BASE_URL"], api_key=os.environ["OPENRESPONSES_API_KEY"])\n'
        + lines
    )
    if streams:
        return head + f"for event in client.responses.{sdk}({args}):\n    print(event.type)\n"
    if sdk == "delete":  # the SDK answers nothing
        return head + f'client.responses.{sdk}({args})\nprint("deleted", {args})\n'
    return head + f"answer = client.responses.{sdk}({args})\nprint(answer.model_dump_json(indent=2))\n"


def _typescript(method: str, ids: list[str], body: Any, streams: bool) -> str:
    lines, args = _arguments(ids, body, python=False)
    head = (
        'import { OpenResponses } from "openresponses-runtime";\n\n'
        "const client = new OpenResponses(); // $OPENRESPONSES_BASE_URL and $OPENRESPONSES_API_KEY\n" + lines
    )
    if streams:
        return head + f"for await (const event of await client.responses.{method}({args})) console.log(event.type);\n"
    return head + f"console.log(JSON.stringify(await client.responses.{method}({args}), null, 2));\n"


def _typescript_request(method: str, path: str, body: Any) -> str:
    """A sample for an operation the generated client has no method for: its `request`."""
    lines, _ = _arguments([], body, python=False)
    send = f'"{method.upper()}", "{path}"' + (", { body }" if body is not None else "")
    return (
        'import { OpenResponses } from "openresponses-runtime";\n\n'
        "const client = new OpenResponses(); // $OPENRESPONSES_BASE_URL and $OPENRESPONSES_API_KEY\n"
        + lines
        + f"const answer = await client.request({send});\n"
        + "console.log(JSON.stringify(await answer.json(), null, 2));\n"
    )


def _openai_node(sdk: str, ids: list[str], body: Any, streams: bool) -> str:
    lines, args = _arguments(ids, body, python=False)
    head = (
        'import OpenAI from "openai";\n\n'
        "const client = new OpenAI({\n"
        "  baseURL: process.env.OPENRESPONSES_BASE_URL,\n"
        "  apiKey: process.env.OPENRESPONSES_API_KEY,\n"
        "});\n" + lines
    )
    if streams:
        return head + f"for await (const event of await client.responses.{sdk}({args})) console.log(event.type);\n"
    if sdk == "delete":  # the SDK answers nothing
        return head + f'await client.responses.{sdk}({args});\nconsole.log("deleted", {args});\n'
    if sdk.endswith(".list"):  # a page: its items
        return (
            head
            + f"const page = await client.responses.{sdk}({args});\nconsole.log(JSON.stringify(page.data, null, 2));\n"
        )
    return head + f"console.log(JSON.stringify(await client.responses.{sdk}({args}), null, 2));\n"
