"""Tests for orspec.diff: normalisation, each change kind and its classification, rendering, and
end-to-end runs on the upstream releases and on our own spec."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from typing import Any

import pytest
from orspec.bundle import bundle
from orspec.cli import main
from orspec.diff import RULES, Change, diff_documents, diff_specs, render
from orspec.problems import SpecError

from ..conftest import ROOT, UPSTREAM

OLD_RELEASE = UPSTREAM / "2026-01-15" / "openapi.json"
NEW_RELEASE = UPSTREAM / "2026-04-24" / "openapi.json"

S = "/components/schemas"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def spec(**schemas: Any) -> dict[str, Any]:
    """A small document: `Req` travels in requests, `Resp` in responses, `Shared` in both."""
    base: dict[str, Any] = {
        "Req": {"type": "object", "properties": {"shared": ref("Shared")}},
        "Resp": {"type": "object", "properties": {"shared": ref("Shared")}},
        "Shared": {"type": "object", "properties": {}},
    }
    base.update(schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/things": {
                "post": {
                    "operationId": "createThing",
                    "requestBody": {"content": {"application/json": {"schema": ref("Req")}}},
                    "responses": {
                        "200": {"description": "ok", "content": {"application/json": {"schema": ref("Resp")}}}
                    },
                }
            }
        },
        "components": {"schemas": base},
    }


def obj(required: list[str] | None = None, **properties: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def only(changes: list[Change]) -> Change:
    assert len(changes) == 1, [str(c) for c in changes]
    return changes[0]


def effect(change: Change) -> tuple[bool, bool]:
    return change.breaking_for_clients, change.breaking_for_servers


CLIENTS, SERVERS, BOTH, NONE = (True, False), (False, True), (True, True), (False, False)


# --- normalisation: equivalent spellings are not changes ---------------------------------------------


def test_identical_documents_have_no_changes():
    assert diff_documents(spec(), spec()) == []


def test_allof_ref_with_annotation_equals_ref_with_sibling():
    old = spec(Req=obj(mode={"allOf": [ref("Shared"), {"description": "How."}]}))
    new = spec(Req=obj(mode={"$ref": "#/components/schemas/Shared", "description": "How, reworded."}))
    assert diff_documents(old, new) == []


def test_anyof_null_equals_type_list_and_openapi30_nullable():
    spellings = [
        {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]},
        {"type": ["string", "null"], "maxLength": 5},
        {"type": "string", "maxLength": 5, "nullable": True},
        {"oneOf": [{"type": "null"}, {"type": "string", "maxLength": 5, "description": "x"}], "description": "y"},
    ]
    docs = [spec(Resp=obj(name=s)) for s in spellings]
    for other in docs[1:]:
        assert diff_documents(docs[0], other) == []


def test_nullable_ref_spellings_are_equal():
    old = spec(Resp=obj(detail={"anyOf": [{"allOf": [ref("Shared"), {"description": "d"}]}, {"type": "null"}]}))
    new = spec(Resp=obj(detail={"anyOf": [{**ref("Shared"), "description": "other"}, {"type": "null"}]}))
    assert diff_documents(old, new) == []


def test_annotations_are_ignored_unless_docs():
    old = spec(Resp=obj(name={"type": "string", "description": "a", "title": "A", "example": "x"}))
    new = spec(
        Resp=obj(
            name={
                "type": "string",
                "description": "b",
                "examples": ["y"],
                "x-enumDescriptions": {},
                "x-unionTitle": "T",
            }
        )
    )
    assert diff_documents(old, new) == []
    change = only(diff_documents(old, new, docs=True))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/Resp/properties/name", "description-changed", NONE)


def test_ref_equals_identical_inline_schema():
    color = {"type": "string", "enum": ["red", "blue"]}
    old = spec(Color=color, Resp=obj(color=ref("Color")))
    new = spec(Color=color, Resp=obj(color=dict(color, description="inline")))
    assert diff_documents(old, new) == []
    newer = spec(Color=color, Resp=obj(color={"type": "string", "enum": ["red", "blue", "green"]}))
    change = only(diff_documents(old, newer))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/Resp/properties/color", "enum-value-added", CLIENTS)


def test_enum_order_does_not_matter():
    old = spec(Resp=obj(c={"type": "string", "enum": ["a", "b"]}))
    new = spec(Resp=obj(c={"type": "string", "enum": ["b", "a"]}))
    assert diff_documents(old, new) == []


# --- schemas and properties ----------------------------------------------------------------------------


def test_schema_added_is_not_breaking_and_removed_breaks_clients():
    old, new = spec(), spec(Extra={"type": "string"})
    added = only(diff_documents(old, new))
    assert (added.pointer, added.kind, effect(added)) == (f"{S}/Extra", "schema-added", NONE)
    removed = only(diff_documents(new, old))
    assert (removed.pointer, removed.kind, effect(removed)) == (f"{S}/Extra", "schema-removed", CLIENTS)


@pytest.mark.parametrize(
    ("schema", "required", "expected"),
    [
        ("Req", False, SERVERS),  # servers must accept it; clients need not send it
        ("Req", True, BOTH),  # clients must now send it
        ("Resp", False, NONE),  # clients ignore unknown fields
        ("Resp", True, SERVERS),  # servers must now send it
        ("Shared", False, SERVERS),
    ],
)
def test_property_added(schema, required, expected):
    old = spec(**{schema: obj(a={"type": "string"})})
    new = spec(**{schema: obj(["b"] if required else None, a={"type": "string"}, b={"type": "integer"})})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind) == (f"{S}/{schema}/properties/b", "property-added")
    assert ("required" in change.message) is required
    assert effect(change) == expected


@pytest.mark.parametrize("schema", ["Req", "Resp"])
def test_property_removed_breaks_clients(schema):
    old = spec(**{schema: obj(a={"type": "string"}, b={"type": "string"})})
    new = spec(**{schema: obj(a={"type": "string"})})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/{schema}/properties/b", "property-removed", CLIENTS)


@pytest.mark.parametrize(
    ("schema", "old_required", "new_required", "kind", "expected"),
    [
        ("Req", [], ["a"], "required-added", CLIENTS),  # a request field made required breaks clients
        ("Req", ["a"], [], "required-removed", SERVERS),
        ("Resp", ["a"], [], "required-removed", CLIENTS),  # a response field made optional breaks clients
        ("Resp", [], ["a"], "required-added", SERVERS),
    ],
)
def test_required_changes(schema, old_required, new_required, kind, expected):
    old = spec(**{schema: obj(old_required, a={"type": "string"})})
    new = spec(**{schema: obj(new_required, a={"type": "string"})})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/{schema}/properties/a", kind, expected)


@pytest.mark.parametrize(
    ("old_type", "new_type", "schema", "expected"),
    [
        ("string", "integer", "Req", BOTH),
        ("string", ["string", "integer"], "Resp", CLIENTS),  # widened in a response
        ("string", ["string", "integer"], "Req", SERVERS),  # widened in a request
        (["string", "integer"], "string", "Req", CLIENTS),  # narrowed in a request
    ],
)
def test_type_changed(old_type, new_type, schema, expected):
    old = spec(**{schema: obj(a={"type": old_type})})
    new = spec(**{schema: obj(a={"type": new_type})})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/{schema}/properties/a", "type-changed", expected)


def test_ref_target_changed_breaks_both():
    old = spec(A={"type": "string"}, B={"type": "string"}, Resp=obj(a=ref("A")))
    new = spec(A={"type": "string"}, B={"type": "string"}, Resp=obj(a=ref("B")))
    change = only(diff_documents(old, new))
    assert (change.kind, effect(change)) == ("type-changed", BOTH)
    assert "`B`" in change.message and "`A`" in change.message


@pytest.mark.parametrize(
    ("schema", "added", "expected"),
    [
        ("Resp", True, CLIENTS),  # exhaustive switches in clients
        ("Req", True, SERVERS),
        ("Req", False, CLIENTS),  # clients may still send it
        ("Resp", False, SERVERS),  # servers may still send it
        ("Shared", True, BOTH),  # travels both ways
    ],
)
def test_enum_values(schema, added, expected):
    small = {"type": "string", "enum": ["a", "b"]}
    large = {"type": "string", "enum": ["a", "b", "c"]}
    old = spec(**{schema: obj(v=small if added else large)})
    new = spec(**{schema: obj(v=large if added else small)})
    change = only(diff_documents(old, new))
    kind = "enum-value-added" if added else "enum-value-removed"
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/{schema}/properties/v", kind, expected)
    assert '"c"' in change.message


def test_unreachable_schema_is_treated_as_both_directions():
    old = spec(Orphan={"type": "string", "enum": ["a"]})
    new = spec(Orphan={"type": "string", "enum": ["a", "b"]})
    assert effect(only(diff_documents(old, new))) == BOTH


@pytest.mark.parametrize(("schema", "expected"), [("Resp", CLIENTS), ("Req", SERVERS)])
def test_nullable_changed(schema, expected):
    old = spec(**{schema: obj(a={"type": "string"})})
    new = spec(**{schema: obj(a={"anyOf": [{"type": "string"}, {"type": "null"}]})})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/{schema}/properties/a", "nullable-changed", expected)
    back = only(diff_documents(new, old))
    assert back.kind == "nullable-changed" and effect(back) == expected[::-1]


def test_default_changed_breaks_both():
    old = spec(Req=obj(n={"type": "integer", "default": 1}))
    new = spec(Req=obj(n={"type": "integer", "default": 2}))
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/Req/properties/n", "default-changed", BOTH)
    assert "`1`" in change.message and "`2`" in change.message


def test_discriminator_changed():
    members = {"A": obj(["type"], type={"type": "string", "enum": ["a"]}), "B": obj(["kind"], kind={"type": "string"})}
    old = spec(**members, U={"oneOf": [ref("A"), ref("B")], "discriminator": {"propertyName": "type"}})
    new = spec(**members, U={"oneOf": [ref("A"), ref("B")], "discriminator": {"propertyName": "kind"}})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/U", "discriminator-changed", BOTH)


def test_mapping_entries_added_removed_and_moved():
    members = {
        "A": obj(["type"], type={"type": "string", "enum": ["a"]}),
        "B": obj(["type"], type={"type": "string", "enum": ["b"]}),
    }
    union = {"oneOf": [ref("A"), ref("B")], "discriminator": {"propertyName": "type"}}
    mapped = lambda mapping: {**union, "discriminator": {"propertyName": "type", "mapping": mapping}}  # noqa: E731
    plain, a_only = spec(**members, U=union), spec(**members, U=mapped({"a": ref("A")["$ref"]}))
    change = only(diff_documents(plain, a_only))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/U/discriminator/mapping/a", "mapping-changed", NONE)
    assert "added" in change.message and '`"A"`' in change.message
    change = only(diff_documents(a_only, plain))
    assert (change.kind, effect(change)) == ("mapping-changed", CLIENTS) and "removed" in change.message
    moved = spec(**members, U=mapped({"a": ref("B")["$ref"]}))
    change = only(diff_documents(a_only, moved))
    assert (change.kind, effect(change)) == ("mapping-changed", BOTH)


def test_error_response_through_a_shared_component_is_compared():
    old = spec(Err=obj(["message"], message={"type": "string"}), Err2=obj(["detail"], detail={"type": "string"}))
    old["components"]["responses"] = {
        "BadRequest": {"description": "bad", "content": {"application/json": {"schema": ref("Err")}}}
    }
    old["paths"]["/things"]["post"]["responses"]["400"] = {"$ref": "#/components/responses/BadRequest"}
    new = copy.deepcopy(old)
    new["components"]["responses"]["BadRequest"]["content"]["application/json"]["schema"] = ref("Err2")
    change = only(diff_documents(old, new))
    assert change.pointer == "/paths/~1things/post/responses/400/content/application~1json/schema"
    assert (change.kind, effect(change)) == ("type-changed", BOTH) and "Err2" in change.message
    added = copy.deepcopy(old)
    added["paths"]["/things"]["post"]["responses"]["500"] = {"$ref": "#/components/responses/BadRequest"}
    change = only(diff_documents(old, added))
    assert (change.pointer, change.kind) == ("/paths/~1things/post/responses/500", "response-added")


@pytest.mark.parametrize(
    ("schema", "old_max", "new_max", "expected"),
    [
        ("Req", 10, 5, CLIENTS),  # tighter request: clients may send what is now invalid
        ("Req", 5, 10, SERVERS),  # looser request: servers must accept more
        ("Resp", 10, 5, SERVERS),
        ("Resp", 5, 10, CLIENTS),
    ],
)
def test_constraint_changed(schema, old_max, new_max, expected):
    old = spec(**{schema: obj(s={"type": "string", "maxLength": old_max})})
    new = spec(**{schema: obj(s={"type": "string", "maxLength": new_max})})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (
        f"{S}/{schema}/properties/s",
        "constraint-changed",
        expected,
    )


def test_new_pattern_tightens():
    old = spec(Req=obj(s={"type": "string"}))
    new = spec(Req=obj(s={"type": "string", "pattern": "^a"}))
    change = only(diff_documents(old, new))
    assert (change.kind, effect(change)) == ("constraint-changed", CLIENTS)


def test_additional_properties_closed():
    old = spec(Req=obj(a={"type": "string"}))
    new = spec(Req={**obj(a={"type": "string"}), "additionalProperties": False})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/Req", "constraint-changed", CLIENTS)


@pytest.mark.parametrize(
    ("old_extra", "new_extra", "expected"),
    [
        (True, {"type": "string"}, CLIENTS),  # a request schema now restricts extra fields
        ({"type": "string"}, False, CLIENTS),
        (False, {"type": "string"}, SERVERS),
    ],
)
def test_additional_properties_schema_versus_flag(old_extra, new_extra, expected):
    old = spec(Req={**obj(a={"type": "string"}), "additionalProperties": old_extra})
    new = spec(Req={**obj(a={"type": "string"}), "additionalProperties": new_extra})
    change = only(diff_documents(old, new))
    assert (change.kind, effect(change)) == ("constraint-changed", expected)


def test_additional_properties_schemas_are_compared_recursively():
    old = spec(Resp={"type": "object", "additionalProperties": {"type": "string"}})
    new = spec(Resp={"type": "object", "additionalProperties": {"type": "integer"}})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind) == (f"{S}/Resp/additionalProperties", "type-changed")


# --- nesting -------------------------------------------------------------------------------------------


def test_inline_nested_object_property_is_located():
    old = spec(Resp=obj(outer=obj(inner={"type": "string"}, gone={"type": "string"})))
    new = spec(Resp=obj(outer=obj(inner={"type": "integer"})))
    changes = diff_documents(old, new)
    assert [(c.pointer, c.kind) for c in changes] == [
        (f"{S}/Resp/properties/outer/properties/gone", "property-removed"),
        (f"{S}/Resp/properties/outer/properties/inner", "type-changed"),
    ]


def test_array_items_under_nullable_keep_real_pointers():
    old = spec(Resp=obj(list={"anyOf": [{"type": "array", "items": obj(a={"type": "string"})}, {"type": "null"}]}))
    new = spec(
        Resp=obj(
            list={
                "anyOf": [{"type": "array", "items": obj(a={"type": "string"}, b={"type": "string"})}, {"type": "null"}]
            }
        )
    )
    change = only(diff_documents(old, new))
    assert change.pointer == f"{S}/Resp/properties/list/anyOf/0/items/properties/b"
    assert change.kind == "property-added"
    document: Any = new
    for token in change.pointer.split("/")[1:]:
        document = document[int(token)] if isinstance(document, list) else document[token]
    assert document == {"type": "string"}


@pytest.mark.parametrize(("schema", "expected_added"), [("Resp", CLIENTS), ("Req", SERVERS)])
def test_union_variants_by_ref_name(schema, expected_added):
    members = {"A": obj(a={"type": "string"}), "B": obj(b={"type": "string"}), "C": obj(c={"type": "string"})}
    old = spec(**members, **{schema: obj(item={"oneOf": [ref("A"), ref("B")]})})
    new = spec(**members, **{schema: obj(item={"oneOf": [ref("C"), ref("A")]})})
    changes = diff_documents(old, new)
    assert [(c.pointer, c.kind, effect(c)) for c in changes] == [
        (f"{S}/{schema}/properties/item/oneOf/0", "variant-added", expected_added),
        (f"{S}/{schema}/properties/item/oneOf/1", "variant-removed", expected_added[::-1]),
    ]
    assert "`C`" in changes[0].message and "`B`" in changes[1].message


def test_inline_union_variants_are_compared_recursively():
    def union(extra: dict) -> dict:
        return {
            "oneOf": [
                obj(["type"], type={"type": "string", "enum": ["x"]}, v={"type": "string", **extra}),
                {"type": "string"},
            ]
        }

    old, new = spec(Resp=obj(u=union({}))), spec(Resp=obj(u=union({"maxLength": 3})))
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind) == (f"{S}/Resp/properties/u/oneOf/0/properties/v", "constraint-changed")


def test_single_schema_becoming_a_union_is_a_variant_added():
    old = spec(Resp=obj(a={"type": "string"}))
    new = spec(Resp=obj(a={"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}))
    change = only(diff_documents(old, new))
    assert (change.kind, effect(change)) == ("variant-added", CLIENTS)


def test_allof_member_added():
    old = spec(Base=obj(a={"type": "string"}), Req={"allOf": [ref("Base"), obj(b={"type": "string"})]})
    new = spec(Base=obj(a={"type": "string"}), Req={"allOf": [ref("Base"), obj(b={"type": "string"}), ref("Shared")]})
    change = only(diff_documents(old, new))
    assert (change.pointer, change.kind, effect(change)) == (f"{S}/Req/allOf/2", "composition-changed", BOTH)


# --- paths, media types, security ----------------------------------------------------------------------


def test_path_and_operation_added_and_removed():
    old = spec()
    new = copy.deepcopy(old)
    new["paths"]["/other"] = {"get": {"responses": {"200": {"description": "ok"}}}}
    new["paths"]["/things"]["delete"] = {"responses": {"204": {"description": "gone"}}}
    assert [(c.pointer, c.kind, effect(c)) for c in diff_documents(old, new)] == [
        ("/paths/~1other", "path-added", NONE),
        ("/paths/~1things/delete", "operation-added", NONE),
    ]
    assert [(c.pointer, c.kind, effect(c)) for c in diff_documents(new, old)] == [
        ("/paths/~1other", "path-removed", CLIENTS),
        ("/paths/~1things/delete", "operation-removed", CLIENTS),
    ]


def test_media_types():
    old = spec()
    new = copy.deepcopy(old)
    op = new["paths"]["/things"]["post"]
    op["requestBody"]["content"]["application/x-www-form-urlencoded"] = {"schema": ref("Req")}
    op["responses"]["200"]["content"]["text/event-stream"] = {"schema": ref("Resp")}
    at = "/paths/~1things/post"
    assert [(c.pointer, c.kind, effect(c)) for c in diff_documents(old, new)] == [
        (f"{at}/requestBody/content/application~1x-www-form-urlencoded", "media-type-added", SERVERS),
        (f"{at}/responses/200/content/text~1event-stream", "media-type-added", CLIENTS),
    ]
    removed = diff_documents(new, old)
    assert [c.kind for c in removed] == ["media-type-removed", "media-type-removed"]
    assert all(c.breaking_for_clients for c in removed)


def test_inline_operation_schemas_are_compared_in_their_direction():
    old = spec()
    old["paths"]["/things"]["post"]["requestBody"]["content"]["application/json"]["schema"] = obj(a={"type": "string"})
    new = copy.deepcopy(old)
    new["paths"]["/things"]["post"]["requestBody"]["content"]["application/json"]["schema"] = obj(
        a={"type": "string"}, b={"type": "string"}
    )
    change = only(diff_documents(old, new))
    assert change.pointer == "/paths/~1things/post/requestBody/content/application~1json/schema/properties/b"
    assert (change.kind, effect(change)) == ("property-added", SERVERS)


def test_response_status_added():
    """A new success status may surprise a client; a newly documented error status (4xx, 5xx) does
    not, since any server may answer one and a client handles errors by their class."""
    old = spec()
    for status, breaks in (("202", CLIENTS), ("429", NONE), ("503", NONE)):
        new = copy.deepcopy(old)
        new["paths"]["/things"]["post"]["responses"][status] = {"description": "another answer"}
        change = only(diff_documents(old, new))
        assert (change.pointer, change.kind, effect(change)) == (
            f"/paths/~1things/post/responses/{status}",
            "response-added",
            breaks,
        )
        assert ("error response" in change.message) == (status[0] in "45")


def test_operation_id_changed_is_not_breaking():
    old = spec()
    new = copy.deepcopy(old)
    new["paths"]["/things"]["post"]["operationId"] = "makeThing"
    change = only(diff_documents(old, new))
    assert (change.kind, effect(change)) == ("operation-id-changed", NONE)


def test_security_schemes_and_requirements():
    old = spec()
    old["components"]["securitySchemes"] = {"Key": {"type": "apiKey", "in": "header", "name": "X-Key"}}
    new = copy.deepcopy(old)
    new["components"]["securitySchemes"]["Key"] = {"type": "http", "scheme": "bearer", "description": "ignored"}
    new["security"] = [{"Key": []}]
    assert [(c.pointer, c.kind, effect(c)) for c in diff_documents(old, new)] == [
        ("/components/securitySchemes/Key", "security-scheme-changed", BOTH),
        ("/security", "security-requirement-changed", BOTH),
    ]


def test_every_emitted_kind_has_a_rule():
    documented = {
        "schema-added", "schema-removed", "property-added", "property-removed", "type-changed",
        "enum-value-added", "enum-value-removed", "required-added", "required-removed", "nullable-changed",
        "default-changed", "discriminator-changed", "mapping-changed", "constraint-changed", "path-added", "path-removed",
        "operation-added", "operation-removed", "media-type-added", "media-type-removed", "description-changed",
    }  # fmt: skip
    assert documented <= {rule.kind for rule in RULES.values()}


# --- rendering -----------------------------------------------------------------------------------------


def sample_changes() -> list[Change]:
    old = spec(Resp=obj(["y"], y={"type": "string"}, z={"type": "string", "enum": ["a"]}))
    new = spec(Resp=obj(z={"type": "string", "enum": ["a", "b"]}, w={"type": "string", "description": "a | b"}))
    return diff_documents(old, new, docs=True)


def test_render_text_one_line_per_change():
    changes = sample_changes()
    lines = render(changes, "text").splitlines()
    assert len(lines) == len(changes)
    assert f"BREAKING(clients) {S}/Resp/properties/y: property `y` removed" in lines
    assert f"non-breaking {S}/Resp/properties/w: optional property `w` added" in lines
    assert render([], "text") == "no structural differences\n"


def test_render_json_round_trips():
    changes = sample_changes()
    data = json.loads(render(changes, "json"))
    assert [Change(**item) for item in data] == sorted(changes)
    assert set(data[0]) == {"pointer", "kind", "message", "breaking_for_clients", "breaking_for_servers"}


def test_render_md_groups_breaking_first():
    text = render(sample_changes(), "md")
    assert text.index("## Breaking changes") < text.index("## Non-breaking changes")
    assert "| Pointer | Change | Clients | Servers | Details |" in text
    breaking_part = text[: text.index("## Non-breaking changes")]
    assert "property-removed" in breaking_part and "property-added" not in breaking_part


def test_render_is_deterministic_and_rejects_unknown_formats():
    changes = sample_changes()
    for fmt in ("text", "md", "json"):
        assert render(changes, fmt) == render(list(reversed(changes)), fmt)
    with pytest.raises(ValueError, match="unknown format"):
        render(changes, "html")


def test_change_is_frozen():
    change = Change("/x", "schema-added", "schema `x` added")
    with pytest.raises(dataclasses.FrozenInstanceError):
        change.kind = "other"  # type: ignore[misc]
    assert str(change) == "non-breaking /x: schema `x` added"


def test_diff_specs_reports_spec_errors(tmp_path):
    bad = tmp_path / "openapi.yaml"
    bad.write_text("openapi: 3.1.0\ncomponents:\n  schemas:\n    A: {$ref: 'missing.yaml#/A'}\n")
    with pytest.raises(SpecError) as info:
        diff_specs(bad, NEW_RELEASE)
    assert info.value.problems


def test_operations_a_fragment_adds_say_so():
    old = spec()
    new = copy.deepcopy(old)
    answer = {"responses": {"200": {"description": "ok"}}}
    new["paths"]["/other/{id}"] = {"get": {**answer, "x-openresponses-vendor": "zeta"}, "delete": answer}
    new["paths"]["/things"]["delete"] = {**answer, "x-openresponses-vendor": "zeta"}
    assert [c.message for c in diff_documents(old, new)] == [
        "path `/other/{id}` added (GET, DELETE; by the `zeta` fragment)",
        "operation DELETE /things added (by the `zeta` fragment)",
    ]


def test_diff_with_extensions_compares_what_fragments_add():
    release = ROOT / "spec" / "releases" / "2026-04-24" / "openapi.json"
    core_only = {c.pointer for c in diff_specs(release, ROOT / "spec")}
    merged = {c.pointer: c for c in diff_specs(release, ROOT / "spec", extensions=True)}
    added = merged["/paths/~1responses~1{response_id}~1input_items"]
    assert (added.kind, added.breaking) == ("path-added", False)
    assert added.message == "path `/responses/{response_id}/input_items` added (GET; by the `openai` fragment)"
    assert "/components/schemas/OpenaiInputItemList" in merged
    assert not {p for p in core_only if "response_id" in p or "Openai" in p}


def test_cli_diff_extensions(capsys):
    assert main(["diff", "2026-04-24", str(ROOT / "spec"), "--extensions"]) == 0
    out = capsys.readouterr().out
    assert "non-breaking /paths/~1responses~1{response_id}~1cancel: path `/responses/{response_id}/cancel` added" in out
    assert main(["diff", "2026-04-24", str(ROOT / "spec")]) == 0
    assert "response_id" not in capsys.readouterr().out


def test_diff_with_extensions_refuses_a_broken_fragment(tmp_path):
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    (tmp_path / "spec" / "extensions" / "zeta.yaml").write_text("x-openresponses-extension: {vendor: Zeta}\n")
    with pytest.raises(SpecError) as info:
        diff_specs(NEW_RELEASE, tmp_path / "spec", extensions=True)
    assert "vendor slug 'Zeta'" in info.value.problems[0].message


# --- end to end ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release_changes() -> list[Change]:
    return diff_specs(OLD_RELEASE, NEW_RELEASE)


def test_release_diff_finds_compaction(release_changes):
    found = {(c.pointer, c.kind) for c in release_changes}
    for name in ("CompactResponseMethodPublicBody", "CompactResource", "CompactionBody", "CompactionSummaryItemParam"):
        assert (f"{S}/{name}", "schema-added") in found
    assert ("/paths/~1responses~1compact", "path-added") in found
    # The new item kinds join the input and output item unions.
    variants = {c.message: effect(c) for c in release_changes if c.kind == "variant-added"}
    assert variants == {
        "variant `CompactionSummaryItemParam` added": SERVERS,
        "variant `CompactionBody` added": CLIENTS,
    }


def test_release_diff_finds_websocket(release_changes):
    found = {(c.pointer, c.kind) for c in release_changes}
    assert (f"{S}/WebSocketResponseCreateEvent", "schema-added") in found
    assert (f"{S}/WebSocketErrorEvent", "schema-added") in found
    assert ("/paths/~1responses/x-openresponses-websocket", "extension-added") in found


def test_release_diff_finds_phase(release_changes):
    phase = {c.pointer: c for c in release_changes if c.pointer.endswith("/properties/phase")}
    assert set(phase) == {f"{S}/AssistantMessageItemParam/properties/phase", f"{S}/Message/properties/phase"}
    assert all(c.kind == "property-added" and "optional" in c.message for c in phase.values())
    assert effect(phase[f"{S}/AssistantMessageItemParam/properties/phase"]) == SERVERS  # input item
    assert effect(phase[f"{S}/Message/properties/phase"]) == NONE  # output item


def test_release_diff_finds_optional_logprobs(release_changes):
    logprobs = {c.pointer: c for c in release_changes if c.pointer.endswith("/properties/logprobs")}
    assert set(logprobs) == {
        f"{S}/OutputTextContent/properties/logprobs",
        f"{S}/ResponseOutputTextDeltaStreamingEvent/properties/logprobs",
        f"{S}/ResponseOutputTextDoneStreamingEvent/properties/logprobs",
    }
    for change in logprobs.values():
        assert change.kind == "required-removed"
        assert effect(change) == CLIENTS  # a response field that may now be missing


def test_release_diff_has_nothing_unexpected(release_changes):
    expected_kinds = {
        "schema-added", "path-added", "property-added", "required-removed", "variant-added",
        "extension-added", "operation-id-changed", "info-changed",
    }  # fmt: skip
    assert {c.kind for c in release_changes} == expected_kinds
    assert not [c for c in release_changes if c.kind.endswith("-removed") and c.kind != "required-removed"]


ROLES = ("User", "System", "Developer", "Assistant")

# Where spec/ deliberately differs from the upstream 2026-04-24 release, as (pointer, kind) in the
# direction ours -> upstream.
ALLOWED_DEVIATIONS = {
    # Upstream declares `ApiKeyAuth` as an http bearer scheme with an `in: header` that http schemes do
    # not have, and never applies it; ours is `BearerAuth` (http, bearer) applied by top-level security.
    ("/components/securitySchemes/ApiKeyAuth", "security-scheme-added"),
    ("/components/securitySchemes/BearerAuth", "security-scheme-removed"),
    ("/security", "security-requirement-changed"),
    # Ours points at a placeholder server and carries its own info description and license.
    ("/servers", "servers-changed"),
    ("/info/license", "info-changed"),
    ("/info/description", "description-changed"),
    # The protocol states that `tool_choice` defaults to `auto`; ours declares it, upstream's schema does not.
    ("/components/schemas/CreateResponseBody/properties/tool_choice", "default-changed"),
    # Ours types the echoed `JsonSchemaResponseFormat.schema` as an object; upstream's `null` only
    # leaves a server no way to echo the schema it was given (see spec/README.md).
    ("/components/schemas/JsonSchemaResponseFormat/properties/schema", "nullable-changed"),
    ("/components/schemas/JsonSchemaResponseFormat/properties/schema", "type-changed"),
    # Upstream carries two schemas nothing refers to, copies of ImageDetail and FunctionCallStatus; ours drops them.
    ("/components/schemas/DetailEnum", "schema-added"),
    ("/components/schemas/FunctionCallItemStatus", "schema-added"),
    # Ours documents the errors the server answers, with one shared envelope schema (spec/README).
    ("/components/schemas/ErrorResponse", "schema-removed"),
    *(
        (f"/paths/{path}/post/responses/{status}", "response-removed")
        for path in ("~1responses", "~1responses~1compact")
        for status in (400, 401, 404, 413, 415, 429, 500, 503)
    ),
    # Ours counts input tokens (`POST /responses/input_tokens`), as upstream's later schema does.
    ("/paths/~1responses~1input_tokens", "path-removed"),
    ("/components/schemas/InputTokenCountResource", "schema-removed"),
    # Input messages are grouped under MessageItemParam (told apart by `role`); the same values validate.
    ("/components/schemas/MessageItemParam", "schema-removed"),
    # A message may omit `type` (its `role` marks it), as the openai SDK's easy input messages do.
    *((f"/components/schemas/{role}MessageItemParam/properties/type", "required-added") for role in ROLES),
    # An item reference may omit `type` but not send it as null, so tools can discriminate on it.
    ("/components/schemas/ItemReferenceParam/properties/type", "nullable-changed"),
    ("/components/schemas/ItemReferenceParam", "constraint-changed"),  # and carries nothing else
    # Bodies are required JSON: form encoding is dropped, and `tool_choice: required` needs a function.
    ("/paths/~1responses/post/requestBody", "required-removed"),
    ("/paths/~1responses~1compact/post/requestBody", "required-removed"),
    ("/paths/~1responses/post/requestBody/content/application~1x-www-form-urlencoded", "media-type-added"),
    ("/components/schemas/CreateResponseBody", "constraint-changed"),
}


def test_parity_with_upstream():
    ours = bundle(ROOT / "spec").document
    upstream = bundle(NEW_RELEASE).document
    changes = diff_documents(ours, upstream)
    remaining = [str(c) for c in changes if (c.pointer, c.kind) not in ALLOWED_DEVIATIONS]
    assert remaining == []
    # The deliberate deviations are seen, so the allow list is not stale.
    found = {(c.pointer, c.kind) for c in changes}
    assert {
        ("/components/securitySchemes/BearerAuth", "security-scheme-removed"),
        ("/security", "security-requirement-changed"),
        ("/servers", "servers-changed"),
        ("/components/schemas/JsonSchemaResponseFormat/properties/schema", "type-changed"),
    } <= found
