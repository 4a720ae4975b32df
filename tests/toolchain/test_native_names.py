"""`spec/openai-native.yaml`: OpenAI's names the spec does not define, checked by `orspec validate`
and generated into the data the server reads."""

from __future__ import annotations

import shutil

import pytest
from openresponses_runtime.server import native
from orspec.bundle import bundle
from orspec.extensions import extend
from orspec.native import check_native_names, defined_parameters, defined_tool_types

from ..conftest import ROOT, run_orspec, spec_with_vendor


def test_the_spec_list_is_what_the_server_reads():
    spec = bundle(ROOT / "spec")
    extend(spec)
    names, problems = check_native_names(spec)
    assert problems == []
    assert names.parameters == native.PARAMETERS and names.tools == native.TOOL_TYPES
    # what Codex sends with every request, and what it is
    assert {"client_metadata", "generate"} <= set(native.PARAMETERS)
    assert {"namespace", "web_search", "file_search"} <= set(native.TOOL_TYPES)
    assert "Codex" in native.PARAMETERS["client_metadata"]


def test_what_the_spec_defines_is_found_in_core_and_fragments(tmp_path):
    spec = bundle(ROOT / "spec")
    extend(spec)
    assert {"input", "tools", "anthropic:mcp_servers", "type"} <= defined_parameters(spec.document)
    assert defined_tool_types(spec.document) == {"function", "openai:web_search", "anthropic:server_tool"}
    with_vendor = bundle(spec_with_vendor(tmp_path))  # a fragment added beside the shipped ones counts too
    extend(with_vendor)
    assert defined_tool_types(with_vendor.document) == {
        "function",
        "openai:web_search",
        "acme:search",
        "anthropic:server_tool",
    }


@pytest.fixture
def spec_copy(tmp_path):
    shutil.copytree(ROOT / "spec", tmp_path / "spec", ignore=shutil.ignore_patterns("releases"))
    return tmp_path / "spec"


def test_validate_reports_each_problem_at_its_line(spec_copy):
    (spec_copy / "openai-native.yaml").write_text(
        "parameters:\n"
        "  client_metadata: ids of the calling client\n"
        "  previous_response_id: defined by the spec\n"  # line 3
        "  Bad-Name: not OpenAI's spelling\n"  # line 4
        "  user:\n"  # line 5: no description
        "tools:\n"
        "  function: defined by the spec\n"  # line 7
        "  openai:web_search: vendor-prefixed\n"  # line 8
        "models: []\n"  # line 9
    )
    result = run_orspec("validate", "--spec", str(spec_copy))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "openai-native.yaml" in line]
    assert lines == [
        f"{spec_copy / 'openai-native.yaml'}:3: /parameters/previous_response_id: 'previous_response_id' is defined "
        "by the spec, so it is not native: remove it from this list",
        f"{spec_copy / 'openai-native.yaml'}:4: /parameters/Bad-Name: 'Bad-Name' is not an OpenAI name: lower case "
        "letters, digits and `_`, at most 64",
        f"{spec_copy / 'openai-native.yaml'}:5: /parameters/user: 'user' needs a description: one line saying what it is",
        f"{spec_copy / 'openai-native.yaml'}:7: /tools/function: 'function' is defined by the spec, so it is not "
        "native: remove it from this list",
        f"{spec_copy / 'openai-native.yaml'}:8: /tools/openai:web_search: 'openai:web_search' is not an OpenAI name: "
        "lower case letters, digits and `_`, at most 64",
        f"{spec_copy / 'openai-native.yaml'}:9: /models: unknown key 'models': expected one of parameters, tools",
    ]


def test_validate_refuses_a_list_that_is_not_a_mapping(spec_copy):
    (spec_copy / "openai-native.yaml").write_text("- client_metadata\n")
    result = run_orspec("validate", "--spec", str(spec_copy))
    assert result.returncode == 1
    assert (
        "openai-native.yaml:1: /: the file must be a mapping with `parameters` and `tools`"
        in result.stdout + result.stderr
    )


def test_a_spec_without_the_list_has_no_native_names(spec_copy):
    (spec_copy / "openai-native.yaml").unlink()
    spec = bundle(spec_copy)
    extend(spec)
    names, problems = check_native_names(spec)
    assert (names.parameters, names.tools, problems) == ({}, {}, [])
