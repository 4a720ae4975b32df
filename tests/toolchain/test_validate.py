"""Validation: OpenAPI schema errors and orspec's lints, each located as file:line: /pointer."""

from __future__ import annotations

from pathlib import Path

import pytest
from orspec.bundle import bundle
from orspec.problems import Level, SpecError
from orspec.validate import validate

from ..conftest import RELEASES, ROOT


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "openapi.yaml"
    path.write_text(text)
    return path


BASE = """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    post:
      operationId: same
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/U"}}}}}
  /b:
    post:
      operationId: same
      responses: {"200": {description: ok}}
components:
  schemas:
    U:
      oneOf: [{$ref: "#/components/schemas/X"}, {$ref: "#/components/schemas/Y"}]
      discriminator:
        propertyName: type
        mapping: {x: "#/components/schemas/X", z: "#/components/schemas/Missing"}
    X: {type: object, required: [type], properties: {type: {type: string, enum: [x]}}}
    Y: {type: object, properties: {kind: {type: string}}}
    Lonely: {type: string}
"""


def test_spec_directory_is_valid():
    problems = validate(bundle(ROOT / "spec"))
    assert [p for p in problems if p.level is Level.ERROR] == []


def test_upstream_security_scheme_flaw_is_reported(shared):
    problems = validate(bundle(RELEASES["2026-04-24"]))
    errors = [p for p in problems if p.level is Level.ERROR]
    assert [p.pointer for p in errors] == ["/components/securitySchemes/ApiKeyAuth"]
    assert errors[0].line > 0 and "'in' was unexpected" in errors[0].message


def test_lints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = [str(p) for p in validate(bundle(spec_file(tmp_path, BASE)))]
    expect = [
        "openapi.yaml:10: /paths/~1b/post/operationId: duplicate operationId 'same'",
        "openapi.yaml:18: /components/schemas/U/discriminator/mapping/z: discriminator mapping 'z' points at missing schema",
        "openapi.yaml:15: /components/schemas/U/oneOf/1: variant Y has no fixed value for discriminator 'type'",
        "openapi.yaml:21: /components/schemas/Lonely: warning: schema 'Lonely' is never used",
    ]
    for line in expect:
        assert any(f.startswith(line) for f in found), (line, found)


def test_wrong_openapi_version(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = [
        str(p)
        for p in validate(bundle(spec_file(tmp_path, "openapi: 2.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n")))
    ]
    assert found == ["openapi.yaml:1: /openapi: unsupported OpenAPI version '2.0.0'; expected 3.1.x or 3.0.x"]


LINTED = """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    post:
      operationId: a
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/S"}}}}}
components:
  schemas:
    S:
      type: object
      required: [name, nmae]
      properties:
        name:
          type: string
          default: 5
        size:
          $ref: "#/components/schemas/Size"
          default: -1
        note:
          anyOf: [{type: string, default: null}, {type: "null"}]
    Size: {type: integer, minimum: 0}
    Both:
      allOf:
      - {type: object, properties: {a: {type: string}}}
      - {type: object, required: [a], properties: {b: {type: string}}}
"""


def test_defaults_required_and_dangling_refs_are_located(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    errors = [str(p) for p in validate(bundle(spec_file(tmp_path, LINTED))) if p.level is Level.ERROR]
    assert errors == [
        "openapi.yaml:12: /components/schemas/S/required/1: required property 'nmae' is not one of the schema's properties",
        "openapi.yaml:16: /components/schemas/S/properties/name/default: default 5 does not match its own schema: "
        "5 is not of type 'string'",
        "openapi.yaml:19: /components/schemas/S/properties/size/default: default -1 does not match its own schema: "
        "-1 is less than the minimum of 0",
    ]


def test_a_dangling_ref_is_reported_at_its_own_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = LINTED.replace(
        '          $ref: "#/components/schemas/Size"', '          $ref: "#/components/schemas/Nothing"'
    )
    with pytest.raises(SpecError) as info:
        bundle(spec_file(tmp_path, text))
    assert [str(p) for p in info.value.problems] == [
        "openapi.yaml:18: /components/schemas/S/properties/size/$ref: $ref '#/components/schemas/Nothing' does not resolve"
    ]


MAPPED = """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    post:
      operationId: a
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/U"}}}}}
components:
  schemas:
    U:
      oneOf: [{$ref: "#/components/schemas/X"}, {$ref: "#/components/schemas/Y"}]
      discriminator:
        propertyName: type
        mapping:
          x: "#/components/schemas/Y"
          w: "#/components/schemas/Other"
    X: {type: object, required: [type], properties: {type: {type: string, enum: [x]}}}
    Y: {type: object, required: [type], properties: {type: {type: string, enum: [y]}}}
    Other: {type: object, required: [type], properties: {type: {type: string, enum: [w]}}}
"""


def test_hand_written_mapping_is_checked_against_the_variants(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = [str(p) for p in validate(bundle(spec_file(tmp_path, MAPPED)))]
    expect = [
        "openapi.yaml:15: /components/schemas/U/discriminator/mapping/x: discriminator mapping 'x' points at Y, "
        "whose 'type' is 'y'",
        "openapi.yaml:16: /components/schemas/U/discriminator/mapping/w: discriminator mapping 'w' points at "
        "'#/components/schemas/Other', which is not one of the variants",
        "openapi.yaml:11: /components/schemas/U/oneOf/0: discriminator value 'x' of X is mapped to",
    ]
    for line in expect:
        assert any(f.startswith(line) for f in found), (line, found)


TYPELESS = """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    post:
      operationId: a
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/U"}}}}}
components:
  schemas:
    U:
      oneOf: [{$ref: "#/components/schemas/Ref"}, {$ref: "#/components/schemas/Msg"}, {$ref: "#/components/schemas/T"}]
      discriminator: {propertyName: type}
    Ref: {type: object, required: [id], properties: {type: {type: string, enum: [ref]}, id: {type: string}}}
    Msg:
      type: object
      required: [role]
      properties: {type: {type: string, enum: [msg]}, role: {type: string}, id: {type: string}}
    T: {type: object, required: [type], properties: {type: {type: string, enum: [t]}}}
"""


@pytest.mark.parametrize(
    ("change", "warned"),
    [
        ({}, False),  # a typeless Msg has `role`, which Ref does not define; any other typeless value is a Ref
        ({"required: [role]": "required: [type, role]"}, False),  # only Ref may omit `type`: it is the default
        ({"required: [role]": "required: []"}, True),  # neither requires a key the other lacks
    ],
)
def test_variants_that_may_omit_the_discriminator_are_warned_about_only_when_ambiguous(
    tmp_path, monkeypatch, change, warned
):
    monkeypatch.chdir(tmp_path)
    text = TYPELESS
    for old, new in change.items():
        text = text.replace(old, new)
    found = [str(p) for p in validate(bundle(spec_file(tmp_path, text))) if p.level is Level.WARNING]
    expected = (
        "openapi.yaml:10: /components/schemas/U: warning: variants Ref, Msg do not require discriminator 'type' "
        "and no key they require tells them apart; require 'type' in all but one of them"
    )
    assert found == ([expected] if warned else [])


def test_mappings_are_completed_from_the_variants_and_keep_hand_written_entries(tmp_path):
    from orspec.mappings import add_mappings

    text = MAPPED.replace('          x: "#/components/schemas/Y"\n', "").replace(
        '          w: "#/components/schemas/Other"\n', '          x: "#/components/schemas/X"\n'
    )
    document = bundle(spec_file(tmp_path, text)).document
    add_mappings(document)
    mapping = document["components"]["schemas"]["U"]["discriminator"]["mapping"]
    assert mapping == {"x": "#/components/schemas/X", "y": "#/components/schemas/Y"}
    assert [p for p in validate(bundle(spec_file(tmp_path, text))) if p.level is Level.ERROR] == []


def test_mapping_in_a_domain_file_is_rewritten_to_component_names(tmp_path):
    (tmp_path / "components").mkdir()
    (tmp_path / "components" / "u.yaml").write_text(
        "U:\n  oneOf: [{$ref: '#/X'}]\n  discriminator: {propertyName: type, mapping: {x: '#/X'}}\n"
        "X: {type: object, required: [type], properties: {type: {type: string, enum: [x]}}}\n"
        "Loose: {type: object}\n"
        "V:\n  oneOf: [{$ref: '#/Loose'}]\n  discriminator: {propertyName: type, mapping: {l: '#/Loose'}}\n"
    )
    root = spec_file(
        tmp_path,
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n"
        "    U: {$ref: 'components/u.yaml#/U'}\n    X: {$ref: 'components/u.yaml#/X'}\n",
    )
    document = bundle(root.parent).document
    assert document["components"]["schemas"]["U"]["discriminator"]["mapping"] == {"x": "#/components/schemas/X"}
    root.write_text(root.read_text() + "    V: {$ref: 'components/u.yaml#/V'}\n")
    try:
        bundle(root.parent)
    except SpecError as exc:
        assert any("must name a schema registered in components/schemas" in p.message for p in exc.problems)
    else:
        raise AssertionError("a mapping to an unregistered schema was bundled")


# Schema objects python-jsonschema rejects for different reasons, and some it accepts: the fast
# jsonschema-rs check may only ever say yes where python-jsonschema finds no error.
META_CASES = [
    {"type": "string", "maxLength": 1.0},
    {"maxLength": -1},
    {"maxLength": 1.5},
    {"type": "strin"},
    {"type": ["string", "null"]},
    {"required": ["a", "a"]},
    {"pattern": "(?<name>a)"},  # a valid ECMA regex but not a Python one: python's format checker decides
    {"patternProperties": {"(?<name>a)": {}}},
    {"propertyNames": {"pattern": "["}},
    {"nullable": "yes"},
    {"discriminator": {"propertyName": 1}},
    {"properties": {"a": {"type": "nope"}}},
    {"items": [{"type": "string"}]},
    {"$ref": 5},
    {"exclusiveMinimum": True},
    {"minItems": True},
    {"externalDocs": {"url": 3}},
    {"default": 10**40},
    {"allOf": []},
    {"dependentRequired": {"a": [1]}},
    {"additionalProperties": 1},
    {"$defs": {"x": {"type": 3}}},
    {"multipleOf": 0},
    {"type": "object", "properties": {"a": {"type": "string", "format": "date"}}},
]


@pytest.mark.parametrize("v31", [True, False], ids=["3.1", "3.0"])
def test_fast_meta_check_accepts_only_what_python_jsonschema_accepts(v31):
    from orspec.validate import _meta_validator, _quick_meta_check

    quick, full = _quick_meta_check(v31), _meta_validator(v31)
    verdicts = [(quick(case), next(iter(full.iter_errors(case)), None) is None) for case in META_CASES]
    assert [case for case, (fast, slow) in zip(META_CASES, verdicts, strict=True) if fast and not slow] == []
    assert sum(fast for fast, _ in verdicts) >= 3  # it does say yes: the valid cases pass without python


def test_fast_meta_check_accepts_every_schema_of_the_spec():
    from orspec.validate import _quick_meta_check, schema_roots

    quick = _quick_meta_check(True)
    roots = list(schema_roots(bundle(ROOT / "spec").document))
    assert roots and all(quick(schema) for _, schema in roots)


def test_fast_structural_check_says_no_where_python_jsonschema_finds_errors():
    from orspec.validate import _quick_structural_check, _structural_validator

    quick, full = _quick_structural_check("3.1.0"), _structural_validator("3.1.0")
    good = bundle(ROOT / "spec").document
    bad = {**good, "info": {"title": 1}, "paths": {"no-slash": {}}}
    assert quick(good) and not list(full.iter_errors(good))
    assert not quick(bad) and list(full.iter_errors(bad))


PARAMETERS = """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /items/{id}:
    parameters: [{$ref: "#/components/parameters/Id"}]
    get:
      parameters:
        - {name: q, in: query, schema: {type: string}}
        - {name: q, in: query, schema: {type: string}}
      responses: {"200": {description: ok}}
    post:
      parameters: [{name: other, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /things/{x}:
    get:
      responses: {"200": {description: ok}}
components:
  parameters:
    Id: {name: id, in: path, required: true, schema: {type: string}}
"""


def test_duplicate_and_unresolved_path_parameters(tmp_path, monkeypatch):
    """The two checks of the paths that openapi-spec-validator made, in its words, references followed."""
    monkeypatch.chdir(tmp_path)
    found = [p.message for p in validate(bundle(spec_file(tmp_path, PARAMETERS))) if p.pointer == "/paths"]
    assert found == [
        "Duplicate parameter 'q'",
        "Path parameter 'other' for 'post' operation in '/items/{id}' was not resolved",
        "Path parameter 'x' for 'get' operation in '/things/{x}' was not resolved",
    ]


ALL_OF_VARIANTS = """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a:
    post:
      operationId: a
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/U"}}}}}
components:
  schemas:
    U:
      oneOf: [{$ref: "#/components/schemas/X"}, {$ref: "#/components/schemas/Y"}]
      discriminator: {propertyName: type}
    Base: {type: object, required: [type, id], properties: {type: {type: string}, id: {type: string}}}
    X:
      allOf:
        - {$ref: "#/components/schemas/Base"}
        - {type: object, properties: {type: {type: string, enum: [x]}}}
    Y:
      allOf:
        - {$ref: "#/components/schemas/Base"}
        - {type: object, properties: {type: {type: string, enum: [y]}}}
"""


@pytest.mark.parametrize(("required", "warned"), [("[type, id]", False), ("[id]", True)], ids=["required", "optional"])
def test_the_discriminator_lint_reads_what_variants_require_through_allof(tmp_path, monkeypatch, required, warned):
    """Variants that take `type` from a shared base through `allOf` require it as much as the base does."""
    monkeypatch.chdir(tmp_path)
    text = ALL_OF_VARIANTS.replace("required: [type, id]", f"required: {required}")
    found = [str(p) for p in validate(bundle(spec_file(tmp_path, text))) if p.level is Level.WARNING]
    assert bool([f for f in found if "do not require discriminator" in f]) == warned, found
