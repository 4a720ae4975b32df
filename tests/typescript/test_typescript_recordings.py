"""The TypeScript client on real traffic: every recorded OpenAI stream and body of `../shared/recordings`,
served as it was recorded, goes through `responses.stream()` and `responses.create()` to its end, the
events that break the spec's schema passed on and reported; `validate: "strict"` stops at the first
with a readable error."""

from __future__ import annotations

import json

import pytest
from openresponses_runtime import models

from ..recordings_server import BODIES, STREAMS, invalid_events, name_of, recordings_server, request_id
from .test_typescript import project, run  # noqa: F401 (a fixture)

pytestmark = pytest.mark.process


def test_every_recording_goes_through_the_client(project):  # noqa: F811
    with recordings_server() as base:
        names = [",".join(name_of(p) for p in paths) for paths in (STREAMS, BODIES)]
        result = run(["node", "recordings.mjs", base, *names], project, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    for path in STREAMS:
        read = report["streams"][name_of(path)]
        recorded = [json.loads(line[6:]) for line in path.read_text().splitlines() if line.startswith("data: ")]
        assert read["types"] == [e["type"] for e in recorded], path.name
        assert [tuple(i) for i in read["invalid"]] == invalid_events(path), path.name
        assert all(m.startswith(f"event {t}") for (t, _), m in zip(read["invalid"], read["messages"], strict=True))
        last = recorded[-1]["response"]
        assert (read["id"], read["status"], read["outputs"]) == (last["id"], "completed", len(last["output"]))
        assert read["outputText"] == read["deltas"]
        assert read["sawDone"] is False  # OpenAI sends no `data: [DONE]`
        assert read["requestId"] == request_id(path)
        error = read["strictError"]
        if not invalid_events(path):
            assert error is None, path.name
            continue
        kind = invalid_events(path)[0][0]
        assert error["isValidationError"] and error["eventType"] == kind
        assert (error["status"], error["requestId"]) == (200, request_id(path))
        assert error["message"].startswith(f"event {kind}") and "Field required" in error["message"]
        assert all(issue["path"] and issue["message"] for issue in error["issues"])
    for path in BODIES:
        read = report["bodies"][name_of(path)]
        recorded = json.loads(path.read_text())
        try:
            models.ResponseResource.model_validate(recorded)
            valid = True
        except ValueError:
            valid = False
        assert (read["id"], read["outputs"]) == (recorded["id"], len(recorded["output"]))
        assert read["reported"] == (0 if valid else 1), path.name
