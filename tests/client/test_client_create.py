"""The generated `create` signature: one typed, documented keyword per create-request property."""

from __future__ import annotations

import inspect
import shutil
import typing

import pytest
from openresponses_runtime import models
from openresponses_runtime.client import CREATE_PARAMS, AsyncClient, Client, Tool
from orspec.generate.client import annotation, client_operations, create_params, python_name
from orspec.pipeline import load_spec
from orspec.schema import build

from ..conftest import ROOT, run_orspec, run_python

FRAGMENT = """\
x-openresponses-extension:
  vendor: zeta
  title: Zeta extensions
x-openresponses-extends:
  CreateResponseBody:
    properties:
      "zeta:priority":
        type: integer
        description: How urgent the request is to Zeta's scheduler, from 0 to 9.
"""


def keywords(method) -> dict[str, inspect.Parameter]:
    return {
        name: p for name, p in inspect.signature(method).parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
    }


def test_every_create_request_property_is_a_keyword():
    properties = models.CreateResponseBody.model_fields
    json_names = {field.alias or name for name, field in properties.items()}
    assert set(CREATE_PARAMS.values()) == json_names - {"stream"}
    sync = keywords(Client(base_url="http://127.0.0.1:9/v1", api_key="k").responses.create)
    asynchronous = keywords(AsyncClient(base_url="http://127.0.0.1:9/v1", api_key="k").responses.create)
    assert (
        set(CREATE_PARAMS) | {"stream", "check", "extra_body", "timeout", "max_retries"}
        == set(sync)
        == set(asynchronous)
    )
    assert CREATE_PARAMS["anthropic_mcp_servers"] == "anthropic:mcp_servers"  # a shipped vendor fragment's field


def test_keywords_are_typed_and_documented():
    from openresponses_runtime.client import _create

    hints = typing.get_type_hints(_create.CreateMethod.create, vars(_create))
    assert hints["temperature"] == float | None
    assert hints["store"] == bool | None
    doc = _create.CreateMethod.create.__doc__
    description = models.CreateResponseBody.model_json_schema()["properties"]["temperature"]
    assert "temperature: Sampling temperature" in doc and "anthropic_mcp_servers:" in doc and description


def test_annotation_mapping():
    document = {
        "components": {
            "schemas": {
                "Mode": {"type": "string", "enum": ["a", "b"]},
                "Thing": {"type": "object", "properties": {"x": {"type": "string"}}},
                "Tier": {"anyOf": [{"type": "string", "enum": ["auto", "flex"]}, {"type": "null"}]},
                "Things": {"oneOf": [{"$ref": "#/components/schemas/Thing"}]},
            }
        }
    }
    model = build(document)
    classes = {name: name for name in model.schemas}

    def python(node):
        return annotation(model.shape(node), model, classes)

    ref = "#/components/schemas/"
    assert python({"$ref": ref + "Mode"}) == "models.Mode | str"
    assert python({"$ref": ref + "Thing"}) == "models.Thing | dict[str, Any]"
    assert python({"anyOf": [{"type": "string"}, {"type": "null"}]}) == "str"
    assert python({"type": "array", "items": {"type": "integer"}}) == "Sequence[int]"
    assert python({"enum": ["x", "y"]}) == "Literal['x', 'y']"
    # One view of the types: a documented reference (`allOf` around it) is still the model, a
    # nullable string enum takes strings, and a one-member union keeps its own model's name.
    assert python({"allOf": [{"$ref": ref + "Thing"}], "description": "d"}) == "models.Thing | dict[str, Any]"
    assert python({"$ref": ref + "Tier"}) == "models.Tier | str"
    assert python({"$ref": ref + "Things"}) == "models.Things | dict[str, Any]"
    assert python_name("zeta:priority") == "zeta_priority" and python_name("class") == "class_"
    assert python_name("check", {"check"}) == "check_"


@pytest.mark.process
def test_a_vendor_fragment_field_becomes_a_keyword_of_create(tmp_path):
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    (spec / "extensions" / "zeta.yaml").write_text(FRAGMENT)
    params = {p.name: p for p in create_params(load_spec(spec).model)}
    assert params["zeta_priority"].json_name == "zeta:priority"
    assert params["zeta_priority"].annotation == "int" and "scheduler" in params["zeta_priority"].description

    out = tmp_path / "out"
    built = run_orspec("build", "--spec", str(spec), "--out", str(out))
    assert built.returncode == 0, built.stderr
    code = (
        "import inspect, typing\n"
        "from openresponses_runtime.client import Client, _create\n"
        "p = inspect.signature(_create.CreateMethod.create).parameters['zeta_priority']\n"
        "print(p.kind.name, p.default, typing.get_type_hints(_create.CreateMethod.create, vars(_create))['zeta_priority'])\n"
        "print(_create.CREATE_PARAMS['zeta_priority'])\n"
        "print('zeta_priority: How urgent' in _create.CreateMethod.create.__doc__)\n"
    )
    done = run_python(code, path=out / "python")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["KEYWORD_ONLY None int | None", "zeta:priority", "True"]


def test_operations_on_a_stored_response_are_methods_named_by_rest_convention():
    found = {(op.group, op.name): op for op in client_operations(load_spec(ROOT / "spec").model)}
    assert set(found) == {
        ("", "retrieve"),
        ("", "delete"),
        ("", "cancel"),
        ("input_items", "list"),
        ("input_tokens", "count"),  # a `POST /responses/<things>` with a body: the first word of its operationId
    }
    count = found["input_tokens", "count"]
    assert count.body_model == "CreateResponseBody" and [p.json_name for p in count.body_params][:2] == [
        "model",
        "input",
    ]
    listing = found["input_items", "list"]
    assert [p.name for p in listing.path_params] == ["response_id"]
    assert [(p.name, p.annotation) for p in listing.query_params] == [
        ("after", "str"),
        ("limit", "int"),
        ("order", "Literal['asc', 'desc']"),
        ("include", "Sequence[models.IncludeEnum | str]"),
    ]
    assert (listing.http_method, listing.returns) == ("GET", "OpenaiInputItemList")
    # The generated methods are what the runtime's client has, sync and async.
    for owner in (Client, AsyncClient):
        responses = owner(base_url="http://127.0.0.1:9/v1", api_key="k").responses
        assert callable(responses.retrieve) and callable(responses.input_items.list)
        assert "after" in inspect.signature(responses.input_items.list).parameters
        assert "previous_response_id" in inspect.signature(responses.input_tokens.count).parameters


def test_any_operation_on_one_response_becomes_a_method():
    answer = {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/T"}}}}}
    parameter = {"name": "rid", "in": "path", "required": True, "schema": {"type": "string"}}
    document = {
        "components": {"schemas": {"T": {"type": "object"}}},
        "paths": {
            "/responses/{rid}/archive": {"parameters": [parameter], "post": {"responses": answer}},
            "/responses/{rid}/steps": {"parameters": [parameter], "get": {"responses": answer}},
            "/responses/{rid}/a/b": {"parameters": [parameter], "get": {"responses": answer}},  # no convention
            "/things/{rid}": {"parameters": [parameter], "get": {"responses": answer}},  # not `client.responses`
        },
    }
    made = [(op.group, op.name, op.path_code) for op in client_operations(build(document))]
    assert made == [
        ("", "archive", "/responses/{_segment(rid)}/archive"),
        ("steps", "list", "/responses/{_segment(rid)}/steps"),
    ]


def test_tools_from_plain_callables():
    def get_weather(city: str, unit: typing.Literal["C", "F"] = "C") -> str:
        """Get the current weather for a city.

        Args:
            city: The city's name,
                in English.
            unit: Celsius or Fahrenheit.
        """
        return f"{city} {unit}"

    tool = Tool(get_weather)
    assert tool.definition["name"] == "get_weather"
    assert tool.definition["description"] == "Get the current weather for a city."
    parameters = tool.definition["parameters"]
    assert parameters["required"] == ["city"] and parameters["additionalProperties"] is False
    assert parameters["properties"]["city"] == {
        "type": "string",
        "title": "City",
        "description": "The city's name, in English.",
    }
    assert parameters["properties"]["unit"]["enum"] == ["C", "F"]
    assert tool.call('{"city": "Paris", "unit": "F"}') == "Paris F"
    explicit = Tool.from_definition(
        models.FunctionToolParam(type="function", name="weather", parameters={}), get_weather
    )
    assert explicit.name == "weather" and explicit.call('{"city": "Oslo"}') == "Oslo C"


@pytest.mark.process
def test_core_runtime_imports_without_httpx():
    code = (
        "import sys\n"
        "sys.modules['httpx'] = None\n"  # as if httpx were not installed
        "import openresponses_runtime, openresponses_runtime.events, openresponses_runtime.streaming\n"
        "try:\n"
        "    import openresponses_runtime.client\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = run_python(code, path=ROOT / "generated" / "python")
    assert done.returncode == 0, done.stderr
    assert "openresponses_runtime.client needs httpx" in done.stdout
