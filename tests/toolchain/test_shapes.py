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
    TupleShape,
    UnionShape,
    runtime_checks,
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


def test_tuples_patterns_and_defs():
    string, integer = PrimitiveShape(kind="string"), PrimitiveShape(kind="integer")
    closed = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False, "minItems": 2}
    assert shape(closed) == TupleShape(prefix=(string, integer), rest=None, min_items=2)
    open_ended = {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}
    assert shape(open_ended) == TupleShape(prefix=(string,), rest=integer)
    patterns = {"^x-": {"type": "string"}, "^n_": {"type": "integer"}}
    only = shape({"type": "object", "patternProperties": patterns, "additionalProperties": False})
    assert only == MapShape(values=UnionShape(members=(string, integer)), patterns=(("^x-", string), ("^n_", integer)))
    loose = shape({"type": "object", "patternProperties": patterns})
    assert loose.values == PrimitiveShape(kind="any")
    holder = {"$defs": {"leaf": {"type": "integer"}}}
    doc = {"components": {"schemas": {"Holder": holder}}}
    assert shape_of({"$ref": "#/components/schemas/Holder/$defs/leaf"}, doc) == integer


def test_runtime_checks_keep_the_path_to_what_no_type_says():
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "labels": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
            "ref": {"$ref": "#/components/schemas/Item"},
        },
        "if": {"properties": {"name": {"const": "a"}}},
        "then": {"required": ["labels"]},
    }
    assert runtime_checks(schema) == {
        "if": {"properties": {"name": {"const": "a"}}},
        "then": {"required": ["labels"]},
        "properties": {"labels": {"propertyNames": {"pattern": "^[a-z]+$"}}},
    }
    closed = {"properties": {"a": {}}, "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False}
    assert runtime_checks(closed) == {
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": False,
        "properties": {"a": {}},
    }
    assert runtime_checks({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}}) is None
