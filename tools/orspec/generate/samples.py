"""Code samples for an operation, made from the request examples the spec gives it.

Each named example of an operation's JSON request body becomes a curl command, a program for
orspec's Python client (`openresponses_runtime.client`), one for the openai Python SDK, one for the
generated TypeScript client (the `openresponses-runtime` npm package) and one for openai-node (plain
ES module JavaScript, so they run as they are and type-check as TypeScript). All
read the server's base URL (ending in `/v1`) and key from `$OPENRESPONSES_BASE_URL` and
`$OPENRESPONSES_API_KEY`, so they run unchanged against any server; the tests run them against
`orspec serve`. The SDKs' method for each operation is named here, since the spec does not say it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# operationId -> the method of `client.responses` in orspec's Python client and in the openai SDKs,
# and in the generated TypeScript client (`generated/typescript`), which has no `compact` yet.
SDK_METHODS = {"createResponse": "create", "compactResponse": "compact"}
TYPESCRIPT_METHODS = {"createResponse": "create"}


@dataclass(frozen=True)
class Sample:
    example: str  # the example's name in the spec
    summary: str
    label: str  # curl | Python | openai (Python) | TypeScript | openai-node
    language: str  # the code fence's language
    code: str
    streams: bool


def samples(operation_id: str, method: str, path: str, examples: list[tuple[str, str, Any]]) -> list[Sample]:
    """The samples of one operation: four per example of its request body."""
    out = []
    sdk = SDK_METHODS.get(operation_id)
    for name, summary, body in examples:
        streams = isinstance(body, dict) and body.get("stream") is True
        out.append(Sample(name, summary, "curl", "sh", _curl(method, path, body, streams), streams))
        if sdk:
            out.append(Sample(name, summary, "Python", "python", _python(sdk, body, streams), streams))
            out.append(Sample(name, summary, "openai (Python)", "python", _openai_python(sdk, body, streams), streams))
            if operation_id in TYPESCRIPT_METHODS:
                code = _typescript(TYPESCRIPT_METHODS[operation_id], body, streams)
                out.append(Sample(name, summary, "TypeScript", "js", code, streams))
            out.append(Sample(name, summary, "openai-node", "js", _openai_node(sdk, body, streams), streams))
    return out


def _curl(method: str, path: str, body: Any, streams: bool) -> str:
    data = json.dumps(body, indent=2, ensure_ascii=False).replace("'", "'\\''")
    flags = "-sS -N" if streams else "-sS"
    return (
        f'curl {flags} -X {method.upper()} "$OPENRESPONSES_BASE_URL{path}" \\\n'
        '  -H "Authorization: Bearer $OPENRESPONSES_API_KEY" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        f"  -d '{data}'\n"
    )


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


def _python(sdk: str, body: Any, streams: bool) -> str:
    head = (
        "from openresponses_runtime.client import Client\n\n"
        "client = Client()  # $OPENRESPONSES_BASE_URL and $OPENRESPONSES_API_KEY\n"
        f"body = {_python_literal(body)}\n"
    )
    if streams:
        return head + (
            f"with client.responses.{sdk}(**body) as stream:\n"
            "    for event in stream:\n"
            "        print(event.type)\n"
            "    response = stream.final_response()\n"
            "print(response.status)\n"
        )
    return head + f"answer = client.responses.{sdk}(**body)\nprint(answer.model_dump_json(indent=2))\n"


def _openai_python(sdk: str, body: Any, streams: bool) -> str:
    head = (
        "import os\n\n"
        "from openai import OpenAI\n\n"
        'client = OpenAI(base_url=os.environ["OPENRESPONSES_BASE_URL"], api_key=os.environ["OPENRESPONSES_API_KEY"])\n'
        f"body = {_python_literal(body)}\n"
    )
    if streams:
        return head + f"for event in client.responses.{sdk}(**body):\n    print(event.type)\n"
    return head + f"answer = client.responses.{sdk}(**body)\nprint(answer.model_dump_json(indent=2))\n"


def _typescript(method: str, body: Any, streams: bool) -> str:
    head = (
        'import { OpenResponses } from "openresponses-runtime";\n\n'
        "const client = new OpenResponses(); // $OPENRESPONSES_BASE_URL and $OPENRESPONSES_API_KEY\n"
        f"const body = {json.dumps(body, indent=2, ensure_ascii=False)};\n"
    )
    if streams:
        return head + f"for await (const event of await client.responses.{method}(body)) console.log(event.type);\n"
    return head + f"console.log(JSON.stringify(await client.responses.{method}(body), null, 2));\n"


def _openai_node(sdk: str, body: Any, streams: bool) -> str:
    head = (
        'import OpenAI from "openai";\n\n'
        "const client = new OpenAI({\n"
        "  baseURL: process.env.OPENRESPONSES_BASE_URL,\n"
        "  apiKey: process.env.OPENRESPONSES_API_KEY,\n"
        "});\n"
        f"const body = {json.dumps(body, indent=2, ensure_ascii=False)};\n"
    )
    if streams:
        return head + f"for await (const event of await client.responses.{sdk}(body)) console.log(event.type);\n"
    return head + f"console.log(JSON.stringify(await client.responses.{sdk}(body), null, 2));\n"
