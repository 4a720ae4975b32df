"""The reference docs generator (`generated/docs/`), its escaping, and `orspec docs build`."""

from __future__ import annotations

import json
import re
import textwrap
from html import unescape
from pathlib import Path

import openresponses_runtime.models as python_models
import pytest
from orspec.generate.docs import (
    anchor,
    example_for,
    example_json,
    generate_docs,
    lifecycle_diagrams,
    md_cell,
    md_text,
)
from orspec.pipeline import TEMPLATES, load_spec
from orspec.publish import event_union

from ..conftest import RELEASES, ROOT, run_orspec

GENERATED = ROOT / "generated"
NASTY = "a | b <script>alert(1)</script> {{ x }} {% if y %}z{% endif %} `code | x` ` & \n second line"


@pytest.fixture(scope="module")
def document() -> dict:
    return json.loads((GENERATED / "openapi.json").read_text())


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((GENERATED / "docs").glob("*.md"))}


def _anchors(pages: dict[str, str]) -> dict[str, str]:
    """Explicit `{ #id }` anchors of the Markdown pages: id -> page."""
    return {m.group(1): name for name, text in pages.items() for m in re.finditer(r"\{ #([^\s}]+) \}", text)}


def _event_types(document: dict) -> list[str]:
    op = document["paths"]["/responses"]["post"]
    union = event_union(op["responses"]["200"]["content"]["text/event-stream"]["schema"])["oneOf"]
    schemas = document["components"]["schemas"]
    out = []
    for ref in union:
        prop = schemas[ref["$ref"].rsplit("/", 1)[1]]["properties"]["type"]
        out.extend(prop.get("enum") or [prop.get("const")])
    return out


def _table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


# -- coverage ---------------------------------------------------------------------------------------


def test_every_schema_has_a_reference_entry(document, pages):
    anchors = _anchors(pages)
    schemas = document["components"]["schemas"]
    missing = [name for name in schemas if anchor(name) not in anchors]
    assert not missing
    for name in schemas:  # on exactly one page, the one of its domain file
        assert sum(text.count(f"{{ #{anchor(name)} }}") for text in pages.values()) == 1, name


def test_every_schema_names_its_python_model_and_typescript_schema(document, pages):
    """The reference of the generated packages gives each schema's names in both, and both exist; a
    release's reference, of no package, gives none."""
    typescript = (GENERATED / "typescript" / "models.js").read_text()
    names = re.compile(
        r"^## (\S+) \{ #\S+ \}\n(?:(?!^## ).*\n)*?"
        r"Python: <code>openresponses\\_runtime\.models\.(\S+)</code> · TypeScript: <code>(\S+)</code>",
        re.M,
    )
    found = {
        m[1]: (m[2].replace("\\_", "_"), m[3].replace("\\_", "_")) for t in pages.values() for m in names.finditer(t)
    }
    assert set(found) == set(document["components"]["schemas"])
    for schema, (python, ts) in found.items():
        assert python == ts and hasattr(python_models, python), schema
        assert re.search(rf"^export const {re.escape(ts)} = ", typescript, re.M), schema
    releases = [p for p in (GENERATED / "docs").glob("*/*.md") if p.parent.name[:1].isdigit()]
    assert releases and not any("openresponses\\_runtime.models." in p.read_text() for p in releases)


def test_schemas_are_on_the_page_of_their_domain_file(pages):
    anchors = _anchors(pages)
    for domain in ("items", "content", "tools", "configuration", "responses", "events", "errors"):
        text = (ROOT / "spec" / "components" / f"{domain}.yaml").read_text()
        names = re.findall(r"^([A-Z][A-Za-z0-9]*):", text, re.M)
        assert names
        assert {anchors[n] for n in names} == {f"{domain}.md"}


def test_every_event_type_is_in_the_catalogue(document, pages):
    catalogue = pages["event-catalogue.md"]
    types = _event_types(document)
    assert len(types) >= 24
    for value in types:
        assert f"{{ #event-{anchor(value)} }}" in catalogue, value
    for heading in ("Lifecycle events", "Deltas and done events", "Errors", "Vendor events"):
        assert f"## {heading}" in catalogue


def test_catalogue_categories_are_the_registrys(pages):
    """Each event sits in the section of the category `state-machines.yaml` gives it, as the registry says."""
    from openresponses_runtime.events import EVENT_TYPES

    catalogue = pages["event-catalogue.md"]
    sections = {"lifecycle": "Lifecycle events", "delta": "Deltas and done events", "error": "Errors"}
    sections["custom"] = "Vendor events"
    rows = dict(re.findall(r"^\| \[[^\]]+\]\(#event-([^)]+)\) \| ([^|]+) \|", catalogue, re.M))
    assert len(rows) == len(EVENT_TYPES)
    for event_type, info in EVENT_TYPES.items():
        assert rows[anchor(event_type)].strip() == sections[info.category], event_type


def test_lifecycle_diagrams_come_from_the_state_machines(pages):
    catalogue = pages["event-catalogue.md"]
    assert "```mermaid\nstateDiagram-v2\n    [*] --> created : response.created" in catalogue
    assert "    in_progress --> completed : response.completed" in catalogue


def test_diagram_text_is_sanitised():
    from types import SimpleNamespace as NS

    bad = "x\n}; click A href 'javascript:alert(1)' <b>"
    machine = NS(
        description=bad,
        terminal=("done<",),
        states={"a b": "", "done<": ""},
        transitions=(NS(on=bad, sources=None, target="a b"), NS(on="ev", sources=("a b",), target="done<")),
    )
    (diagram,) = lifecycle_diagrams(NS(machines={"m": machine}))
    lines = diagram.mermaid.splitlines()
    assert lines[1].startswith("    [*] --> a_b : x_") and len(lines) == 4
    assert not set("<>'\"{};\n ") & set(lines[1].split(" : ", 1)[1])


def test_http_api_page(pages):
    text = pages["http-api.md"]
    for needle in ("POST /responses", "/responses/compact", "<code>text/event-stream</code>", "Bearer"):
        assert needle in text
    for status, kind in (("400", "invalid_request"), ("404", "not_found"), ("429", "too_many_requests")):
        assert re.search(rf"\| `{status}` \| `{kind}` \|", text)
    assert "`server_error`" in text and "`model_error`" in text and "`401`" in text
    assert "## WebSocket mode" in text and "WebSocketResponseCreateEvent" in text


def test_fragment_operations_have_their_own_page(pages):
    core, group = pages["http-api.md"], pages["http-openai.md"]
    assert "[HTTP API: OpenAI hosted web search and stored-response operations](http-openai.md)" in core
    assert "{ #op-getResponse }" not in core  # a fragment's operations live on its group's page only
    assert "the <code>openai</code> extension fragment\n(<code>spec/extensions/openai.yaml</code>) adds them" in group
    for operation_id in ("getResponse", "deleteResponse", "cancelResponse", "listInputItems"):
        assert f"{{ #op-{operation_id} }}" in group
    listing = group.split("{ #op-listInputItems }", 1)[1]
    assert (
        "| <code>limit</code> | query | integer | no | How many items the page holds at most, from 1 to 100. |"
        in listing
    )
    assert "[OpenaiInputItemList](openai.md#OpenaiInputItemList)" in listing
    # shared error answers show their body and description, not an empty row
    assert re.search(
        r"\| <code>404</code> \| <code>application/json</code> \| \[ErrorResponse\]\(errors.md#ErrorResponse\) \| \w",
        listing,
    )
    assert "http-openai.md" in pages["index.md"]


def test_enum_descriptions_and_union_tags(pages):
    assert "Image is examined at full resolution" in pages["content.md"]  # x-enumDescriptions
    items = pages["items.md"]
    # input messages share `type: message` (one ItemParam variant) and are told apart by `role`
    assert "| [MessageItemParam](#MessageItemParam) | <code>message</code> |" in items
    messages = items.split("## MessageItemParam", 1)[1].split("\n## ", 1)[0]
    assert "told apart by <code>role</code>" in messages
    assert "| [DeveloperMessageItemParam](#DeveloperMessageItemParam) | <code>developer</code> |" in messages


# -- examples ---------------------------------------------------------------------------------------


def test_examples_validate_against_the_generated_models(document):
    from openresponses_runtime import models
    from pydantic import TypeAdapter

    checked = 0
    for name in document["components"]["schemas"]:
        model = getattr(models, name, None)
        if model is None:
            continue
        TypeAdapter(model).validate_python(example_for(document, name))
        checked += 1
    assert checked >= len(document["components"]["schemas"]) - 5


def test_examples_are_on_the_pages(document, pages):
    text = "".join(pages.values())
    for name in ("ResponseResource", "FunctionCallOutput", "ItemParam"):
        assert example_json(example_for(document, name)) in text


def test_example_json_hides_template_syntax_in_strings():
    text = example_json({"a": "{{ x }} {% y %} {# z #}", "b": {}})
    assert "{{" not in text and "{%" not in text and "{#" not in text
    assert json.loads(text) == {"a": "{{ x }} {% y %} {# z #}", "b": {}}


# -- template safety --------------------------------------------------------------------------------


def test_cell_filter():
    cell = md_cell(NASTY)
    assert "|" not in cell and "<script>" not in cell and "{{" not in cell and "{%" not in cell
    assert "`" not in cell and "\n" not in cell
    assert "<br>" in cell and "<code>code &#124; x</code>" in cell
    assert md_text("- not a list\n\n1. nor this") == "\\- not a list\n\n1\\. nor this"


def _nasty_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "spec"
    (spec / "components").mkdir(parents=True)
    (spec / "openapi.yaml").write_text(
        textwrap.dedent(
            """\
            openapi: 3.1.0
            info: {title: Nasty, version: "1"}
            paths:
              /things:
                post:
                  operationId: makeThing
                  summary: Make a thing
                  requestBody:
                    content:
                      application/json:
                        schema: {$ref: "components/items.yaml#/Thing"}
                  responses:
                    "200":
                      description: The thing.
                      content:
                        application/json:
                          schema: {$ref: "components/items.yaml#/Thing"}
            components:
              schemas:
                Thing: {$ref: "components/items.yaml#/Thing"}
                Mode: {$ref: "components/items.yaml#/Mode"}
            """
        )
    )
    (spec / "components" / "items.yaml").write_text(
        textwrap.dedent(
            """\
            Thing:
              type: object
              description: {nasty}
              required: [name]
              properties:
                name:
                  type: string
                  description: {nasty}
                "we|ird<b>":
                  description: {nasty}
                  anyOf:
                  - {{$ref: "#/Mode"}}
                  - {{type: "null"}}
            Mode:
              type: string
              description: {nasty}
              enum: [fast, "sl|ow"]
              x-enumDescriptions:
                fast: {nasty}
                "sl|ow": plain
            """
        ).format(nasty=json.dumps(NASTY))
    )
    return spec


def test_untrusted_strings_render_as_text(tmp_path):
    markdown_lib = pytest.importorskip("markdown")
    spec = load_spec(_nasty_spec(tmp_path), lenient=True)
    out = generate_docs(spec.model, TEMPLATES, spec.bundle.sources, spec.bundle.root_file)
    page = out["docs/items.md"].decode()
    for text in out.values():
        assert b"<script" not in text and b"{{" not in text and b"{%" not in text
    rows = _table_rows(page)
    field_rows = [r for r in rows if r.startswith("| <code>")]
    assert len(field_rows) == 2 + 2  # two fields of Thing, two enum values of Mode
    header = next(r for r in rows if r.startswith("| Field"))
    for row in [header, *field_rows[:2]]:
        assert row.count("|") == 7, row  # 6 columns: every `|` from the spec was escaped
    html = markdown_lib.markdown(page, extensions=["tables", "attr_list", "toc", "admonition", "pymdownx.superfences"])
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    text = unescape(html)  # as the reader sees it: the template syntax shown as text, not interpreted
    assert "{{ x }}" in text and "{% if y %}z{% endif %}" in text and "<code>code | x</code>" in text
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        widths = {len(re.findall(r"<t[dh]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, widths
    assert 'id="Thing"' in html and 'id="Mode"' in html


# -- determinism and other specs --------------------------------------------------------------------


@pytest.mark.slow
def test_docs_are_deterministic_and_relative():
    spec = load_spec(ROOT / "spec")
    first = generate_docs(spec.model, TEMPLATES, spec.bundle.sources, spec.bundle.root_file)
    second = generate_docs(spec.model, TEMPLATES, spec.bundle.sources, spec.bundle.root_file)
    assert first == second
    for content in first.values():
        assert str(ROOT).encode() not in content


def test_single_file_spec_is_split_by_name(shared):
    spec = load_spec(RELEASES["2026-04-24"], lenient=True)
    out = generate_docs(spec.model, TEMPLATES, spec.bundle.sources, spec.bundle.root_file)
    assert {"docs/items.md", "docs/content.md", "docs/events.md", "docs/event-catalogue.md"} <= set(out)
    text = "".join(v.decode() for v in out.values())
    for name in spec.document["components"]["schemas"]:
        assert f"{{ #{anchor(name)} }}" in text


# -- the site ---------------------------------------------------------------------------------------


@pytest.mark.process
def test_orspec_docs_build_is_strict_and_clean(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    site = tmp_path / "site"
    result = run_orspec("docs", "build", "--site-dir", str(site))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "WARNING" not in result.stderr + result.stdout
    assert (site / "index.html").is_file() and (site / "search" / "search_index.json").is_file()
    html = "".join(p.read_text() for p in (site / "reference").rglob("index.html"))
    document = json.loads((GENERATED / "openapi.json").read_text())
    for name in document["components"]["schemas"]:
        assert f'id="{anchor(name)}"' in html, name
    assert '<pre class="mermaid">' in (site / "guides" / "spec-layout" / "index.html").read_text()


def _nav_pages(nav) -> list[str]:
    """The pages of an mkdocs nav, in reading order."""
    if isinstance(nav, str):
        return [nav]
    entries = nav.values() if isinstance(nav, dict) else nav
    return [page for entry in entries for page in _nav_pages(entry)]


def test_nav_leads_with_the_provider_and_client_guides():
    """Most readers build a provider or call one: their guides come before the maintainers'."""
    yaml_load = pytest.importorskip("mkdocs.utils").yaml_load
    pages = _nav_pages(yaml_load((ROOT / "mkdocs.yml").read_text())["nav"])
    guides = [page for page in pages if page.startswith("guides/")]
    assert guides[:2] == ["guides/provider.md", "guides/client.md"]
    assert sorted(guides) == sorted(f"guides/{p.name}" for p in (ROOT / "docs" / "guides").glob("*.md"))


@pytest.mark.process
def test_docs_build_fails_on_a_broken_link(tmp_path):
    pytest.importorskip("material")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[missing](reference/nowhere.md#x)\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nhooks: [{ROOT / 'tools/orspec/mkdocs_hooks.py'}]\n"
        f"watch: []\nnav: [index.md]\n"
    )
    args = ("docs", "build", "--config-file", str(config), "--site-dir", str(tmp_path / "site"))
    result = run_orspec(*args)  # the hook looks for generated/docs beside this config: there is none
    assert result.returncode == 1
    assert "has no reference pages; run `orspec build` first" in result.stderr
    result = run_orspec(*args, env={"ORSPEC_GENERATED_DOCS": str(GENERATED / "docs")})
    assert result.returncode == 1
    assert "nowhere.md" in result.stderr and "mkdocs build failed" in result.stderr


def test_docs_build_without_mkdocs_says_how_to_install(monkeypatch, capsys):
    import importlib.util

    from orspec import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mkdocs" else real(name, *a))
    assert cli.main(["docs", "build"]) == 2
    assert "mkdocs is not installed" in capsys.readouterr().err
