"""The demo model as real agents drive it: tool arguments and `json_schema` answers are valid instances
of the schemas the client sent (checked by python-jsonschema, and by the openai SDK's `responses.parse`
into a pydantic model), and the same request always gets the same bytes."""

from __future__ import annotations

import json
from typing import Literal

import jsonschema
import openai
import pytest
from openresponses_runtime.server import DemoProvider, MemoryStore, create_app
from openresponses_runtime.server.instances import instance_of
from pydantic import BaseModel, Field

from ..server_helpers import API_KEY, live_server

SCHEMAS = {
    "integers, not floats": {
        "type": "object",
        "properties": {"yield_time_ms": {"type": "integer"}, "max_output_tokens": {"type": "number"}},
        "required": ["yield_time_ms", "max_output_tokens"],
    },
    "bounds and steps": {
        "type": "object",
        "properties": {
            "low": {"type": "integer", "minimum": 10, "maximum": 12},
            "exclusive": {"type": "integer", "exclusiveMinimum": 5},
            "step": {"type": "integer", "minimum": 1, "multipleOf": 7},
            "fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "negative": {"type": "number", "maximum": -3.5},
        },
        "required": ["low", "exclusive", "step", "fraction", "negative"],
    },
    "enums, consts, nullable": {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "kind": {"const": "weather"},
            "note": {"type": ["string", "null"]},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 3}]},
        },
        "required": ["unit", "kind", "note", "maybe"],
        "additionalProperties": False,
    },
    "strings": {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
            "id": {"type": "string", "format": "uuid"},
            "short": {"type": "string", "maxLength": 3},
            "long": {"type": "string", "minLength": 40},
        },
        "required": ["when", "day", "mail", "id", "short", "long"],
    },
    "arrays": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "picks": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 3, "uniqueItems": True},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "minItems": 2},
        },
        "required": ["tags", "picks", "pair"],
    },
    "refs, allOf and recursion": {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["name", "children"],
            },
            "Named": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        },
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "both": {
                "allOf": [{"$ref": "#/$defs/Named"}, {"properties": {"age": {"type": "integer"}}, "required": ["age"]}]
            },
        },
        "required": ["tree", "both"],
    },
}


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_instance_is_valid_against_its_schema(schema):
    value = instance_of(schema)
    jsonschema.validate(value, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert instance_of(schema) == value  # deterministic


def test_whole_numbers_where_the_schema_allows_them():
    # Codex reads `yield_time_ms` as an i32: 1.5 failed to parse there, 1 does not.
    value = instance_of(SCHEMAS["integers, not floats"])
    assert value == {"yield_time_ms": 1, "max_output_tokens": 1}
    assert all(type(v) is int for v in value.values())
    assert instance_of({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}) == 0.5


def test_only_required_arguments_when_the_schema_names_them():
    # An agent acts on every argument it gets: `workdir: "example workdir"` would send it astray.
    schema = {
        "type": "object",
        "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}},
        "required": ["cmd"],
    }
    assert instance_of(schema) == {"cmd": "example cmd"}


class Forecast(BaseModel):
    city: str
    unit: Literal["celsius", "fahrenheit"]
    days: int = Field(ge=1, le=14)
    highs: list[float]
    alerts: list[str] | None


@pytest.fixture(scope="module")
def client():
    app = create_app(DemoProvider(), store=MemoryStore(), api_keys=API_KEY)
    with live_server(app) as base_url:
        yield openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)


def test_responses_parse_gets_an_instance_of_the_model(client):
    parsed = client.responses.parse(model="demo", input="Forecast for Paris", text_format=Forecast)
    forecast = parsed.output_parsed
    assert isinstance(forecast, Forecast) and forecast.unit == "celsius" and forecast.days == 1
    again = client.responses.parse(model="demo", input="Forecast for Paris", text_format=Forecast)
    assert again.output_text == parsed.output_text


def test_tool_arguments_follow_the_tool_schema(client):
    tool = {
        "type": "function",
        "name": "exec_command",
        "description": "Run a shell command",
        "parameters": {
            "type": "object",
            "properties": {
                "cmd": {"type": "string"},
                "yield_time_ms": {"type": "number"},
                "max_output_tokens": {"type": "integer", "minimum": 100},
                "shell": {"type": "string", "enum": ["bash", "sh"]},
            },
            "required": ["cmd", "yield_time_ms", "max_output_tokens", "shell"],
        },
    }
    response = client.responses.create(model="demo", input="Please exec a command", tools=[tool])
    (call,) = [item for item in response.output if item.type == "function_call"]
    arguments = json.loads(call.arguments)
    jsonschema.validate(arguments, tool["parameters"])
    assert arguments == {"cmd": "example cmd", "yield_time_ms": 1, "max_output_tokens": 100, "shell": "bash"}
