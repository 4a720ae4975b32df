"""The generated models: names a person would choose, tagged unions, and lossless round trips."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import typing

import pytest
from openresponses_runtime import models
from pydantic import TypeAdapter, ValidationError

from ..conftest import ROOT

MODELS_PY = ROOT / "generated" / "python" / "openresponses_runtime" / "models.py"


def test_no_made_up_class_names():
    tree = ast.parse(MODELS_PY.read_text())
    names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    names += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    bad = [n for n in names if re.fullmatch(r"(Type|Item|Model|Content|Field)\d*|.*\d+", n)]
    assert bad == []
    spec_names = json.loads((ROOT / "generated" / "openapi.json").read_text())["components"]["schemas"]
    assert set(spec_names) <= set(names)


import re  # noqa: E402  (used above inside the test body)


def _discriminator_of(alias) -> object:
    value = alias.__value__
    assert typing.get_origin(value) is typing.Annotated
    return [m for m in value.__metadata__ if hasattr(m, "discriminator") or type(m).__name__ == "Discriminator"][0]


@pytest.mark.parametrize("name", ["ItemField", "StreamingEvent", "ItemParam", "ToolChoiceParam", "TextFormatParam"])
def test_polymorphic_unions_are_tagged(name):
    assert _discriminator_of(getattr(models, name)) is not None


def test_inline_content_unions_are_named_and_tagged():
    assert "MessageContentPart" in repr(models.Message.model_fields["content"].annotation)
    adapter = TypeAdapter(models.MessageContentPart)
    assert (
        type(adapter.validate_python({"type": "output_text", "text": "hi", "annotations": []}))
        is models.OutputTextContent
    )
    with pytest.raises(ValidationError) as info:
        adapter.validate_python({"type": "output_text"})
    assert {e["loc"] for e in info.value.errors()} == {("output_text", "text"), ("output_text", "annotations")}


def test_input_messages_take_a_two_level_tag():
    adapter = TypeAdapter(models.ItemParam)
    assert (
        type(adapter.validate_python({"type": "message", "role": "developer", "content": "x"}))
        is models.DeveloperMessageItemParam
    )
    assert (
        type(adapter.validate_python({"type": "message", "role": "assistant", "content": "x"}))
        is models.AssistantMessageItemParam
    )
    assert type(adapter.validate_python({"id": "msg_1"})) is models.ItemReferenceParam  # type may be omitted
    with pytest.raises(ValidationError) as info:
        adapter.validate_python({"type": "message", "role": "robot", "content": "x"})
    errors = info.value.errors()
    assert len(errors) == 1 and errors[0]["type"] == "union_tag_invalid"
    with pytest.raises(ValidationError) as info:
        adapter.validate_python({"type": "function_call", "call_id": "c", "name": "f"})
    assert all(e["loc"][0] == "function_call" for e in info.value.errors())  # only the tagged branch reports


def test_tool_choice_mixes_strings_and_objects():
    adapter = TypeAdapter(models.ToolChoiceParam)
    assert adapter.validate_python("required") == "required"
    assert adapter.validate_python({"type": "function", "name": "f"}).name == "f"
    with pytest.raises(ValidationError):
        adapter.validate_python("sometimes")


def test_descriptions_become_docstrings():
    assert models.ResponseResource.__doc__ and "response" in models.ResponseResource.__doc__.lower()
    source = MODELS_PY.read_text()
    assert source.count('"""') > 400


def test_valid_example_round_trips(shared):
    data = json.loads((shared / "examples" / "ResponseResource.valid.json").read_text())
    assert "prompt_cache_retention" in data  # the field the schema does not know
    parsed = models.ResponseResource.model_validate(data)
    assert parsed.model_dump(mode="json", exclude_unset=True) == data


def test_upstream_example_is_rejected_with_its_four_errors(shared):
    data = json.loads((shared / "upstream" / "openresponses" / "examples" / "ResponseResource.json").read_text())
    with pytest.raises(ValidationError) as info:
        models.ResponseResource.model_validate(data)
    missing = sorted(".".join(map(str, e["loc"])) for e in info.value.errors() if e["type"] == "missing")
    assert missing == ["frequency_penalty", "presence_penalty", "text.format", "top_logprobs"]
    assert len(info.value.errors()) == 4


@pytest.mark.process
def test_every_streamed_event_round_trips(shared):
    stream = subprocess.run(
        [sys.executable, str(shared / "bench" / "make_stream.py"), "200"], capture_output=True, text=True, check=True
    ).stdout
    adapter = TypeAdapter(models.StreamingEvent)
    events = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")]
    assert len(events) >= 200
    kinds = set()
    for event in events:
        parsed = adapter.validate_python(event)
        assert parsed.type == event["type"]
        kinds.add(type(parsed).__name__)
        assert adapter.dump_python(parsed, mode="json", exclude_unset=True) == event
    assert {"ResponseOutputTextDeltaStreamingEvent", "ResponseFunctionCallArgumentsDeltaStreamingEvent"} <= kinds


def test_unknown_fields_round_trip_on_nested_models():
    data = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c",
        "name": "f",
        "arguments": "{}",
        "status": "completed",
        "acme:trace": {"k": [1, 2]},
    }
    parsed = TypeAdapter(models.ItemField).validate_python(data)
    assert TypeAdapter(models.ItemField).dump_python(parsed, mode="json", exclude_unset=True) == data


def test_names_outside_ascii_are_renamed_as_the_regenerate_guide_says():
    from orspec.generate.normalize import class_names

    names = class_names(["Café", "Größe", "太陽", "Cafe"])
    assert names == {"Café": "Cafe2", "Größe": "GroU00dfe", "太陽": "U592aU967d", "Cafe": "Cafe"}
    assert class_names(["Größe"]) == class_names(["Größe"])  # the same name every build
    guide = (ROOT / "docs" / "guides" / "regenerate.md").read_text()
    assert "`Größe` becomes `GroU00dfe`" in guide and "`太陽` becomes `U592aU967d`" in guide
