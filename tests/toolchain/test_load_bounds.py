"""A YAML spec is composed node by node in Python, so the nodes are bounded: a huge garbage file
gets its own located error within seconds, and a spec at the bound still loads."""

from __future__ import annotations

import json
import time

import pytest
from orspec import load
from orspec.problems import SpecError

from .. import cpu_time
from ..conftest import run_orspec


def _flow_list(path, items: int, *, closed: bool = True):
    path.write_text("info: [" + "a, " * items + ("]\n" if closed else "\n"))
    return path


@pytest.mark.process
def test_an_18_mb_garbage_spec_gets_its_located_error_within_seconds(tmp_path):
    spec = _flow_list(tmp_path / "openapi.yaml", 6_000_000, closed=False)  # the probe: 18 MB, never closed
    assert spec.stat().st_size > 18_000_000
    started = time.monotonic()
    result = run_orspec("validate", "--spec", str(spec), cwd=tmp_path)
    took = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert "openapi.yaml:1: /info: more than 500,000 YAML nodes; a spec this large loads from JSON" in (
        result.stdout + result.stderr
    )
    assert "Traceback" not in result.stderr
    # Composing all of it took 37-44 s on an idle machine; the bound stops it in a few (more on a busy one).
    assert took < cpu_time.scaled(25), f"{took:.1f} s"


@pytest.mark.parametrize(("items", "loads"), [(997, True), (998, False)], ids=["at-the-bound", "one-past"])
def test_the_node_bound_at_its_edge(tmp_path, monkeypatch, items, loads):
    monkeypatch.setattr(load, "MAX_YAML_NODES", 1000)  # the mapping, its key, the list and its items
    spec = _flow_list(tmp_path / "spec.yaml", items)
    if loads:
        assert load.load_file(spec).data == {"info": ["a"] * items}
        return
    with pytest.raises(SpecError) as caught:
        load.load_file(spec)
    (problem,) = caught.value.problems
    assert (problem.line, problem.pointer) == (1, "/info")
    assert problem.message == "more than 1,000 YAML nodes; a spec this large loads from JSON"


def test_the_same_spec_as_json_is_not_bounded_by_it(tmp_path, monkeypatch):
    monkeypatch.setattr(load, "MAX_YAML_NODES", 1000)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"info": ["a"] * 5000}))
    assert len(load.load_file(spec).data["info"]) == 5000
    spec.write_text('{"info": ' + json.dumps(["a"] * 5000) + ', "info": 1}')  # its duplicate is still named
    with pytest.raises(SpecError) as caught:
        load.load_file(spec)
    assert [p.message for p in caught.value.problems] == ["duplicate key 'info'"]
