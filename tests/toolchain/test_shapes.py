"""`schema.shape_of`: the one typed view of a schema node that the TypeScript output renders."""

from __future__ import annotations

from orspec.schema import (
    ArrayShape,
    LiteralShape,
    MapShape,
    ObjectShape,
    PrimitiveShape,
    Property,
    RefShape,
    UnionShape,
    shape_of,
)

DOC = {"components": {"schemas": {"Item": {"type": "object", "properties": {"id": {"type": "string"}}}}}}


def shape(node):
    return shape_of(node, DOC)


def test_nullability_is_one_flag_however_it_is_written():
    nullable_string = PrimitiveShape(kind="string", nullable=True)
    assert shape({"type": ["string", "null"]}) == nullable_string
    assert shape({"anyOf": [{"type": "string"}, {"type": "null"}]}) == nullable_string
    assert shape({"oneOf": [{"type": "null"}, {"type": "string"}]}) == nullable_string
    assert shape({"enum": ["a", "b", None]}) == LiteralShape(values=("a", "b"), nullable=True)
    assert shape({"anyOf": [{"$ref": "#/components/schemas/Item"}, {"type": "null"}]}) == RefShape(
        name="Item", nullable=True
    )


def test_references_stay_references_and_annotation_wrappers_are_dropped():
    ref = {"$ref": "#/components/schemas/Item"}
    assert shape(ref) == RefShape(name="Item")
    assert shape({"allOf": [ref], "description": "the item"}) == RefShape(name="Item")
    assert shape({"allOf": [ref, {"description": "the item"}]}) == RefShape(name="Item")


def test_nested_unions_flatten_and_repeat_members_once():
    node = {"anyOf": [{"type": "string"}, {"anyOf": [{"type": "integer"}, {"type": "string"}]}]}
    assert shape(node) == UnionShape(members=(PrimitiveShape(kind="string"), PrimitiveShape(kind="integer")))


def test_containers_objects_and_constraints():
    assert shape({"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1}) == ArrayShape(
        items=PrimitiveShape(kind="string", constraints=(("maxLength", 3),)), constraints=(("minItems", 1),)
    )
    assert shape({"type": "object", "additionalProperties": {"type": "integer"}}) == MapShape(
        values=PrimitiveShape(kind="integer")
    )
    assert shape({"type": "object"}) == MapShape(values=PrimitiveShape(kind="any"))
    merged = shape(
        {
            "allOf": [
                {"$ref": "#/components/schemas/Item"},
                {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            ]
        }
    )
    assert merged == ObjectShape(
        properties=(
            Property("id", PrimitiveShape(kind="string"), False, ""),
            Property("n", PrimitiveShape(kind="integer"), True, ""),
        )
    )


def test_fields_that_must_be_absent_and_unknown_input():
    assert shape({"x-openresponses-disallowed": True, "type": "string"}) == PrimitiveShape(kind="never")
    assert shape({"not": {}}) == PrimitiveShape(kind="never")
    assert shape({}) == PrimitiveShape(kind="any")
    assert shape("not a schema") == PrimitiveShape(kind="any")
    deep: dict = {"type": "string"}
    for _ in range(100):
        deep = {"type": "array", "items": deep}
    assert shape(deep) is not None  # a depth cap, not a RecursionError
