"""The history of the spec, from its dated releases and the draft: what each version added, changed
and removed, per schema, field and operation, with `orspec diff`'s rules deciding what a change is
and whom it breaks.

Each version is compared with the one before it (the first release with nothing: it adds nothing
the reference would badge). The reference shows the whole history of a schema on every version's
page, so a reader of an old release sees what became of it, and each version gets a page of what
changed, one part for clients and one for servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from jsonpointer import unescape

from ..diff import Change, diff_documents

ADDED, CHANGED, REMOVED = "added", "changed", "removed"
_SCHEMAS = "/components/schemas/"
_PATHS = "/paths/"
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@dataclass(frozen=True)
class Step:
    """One thing that happened to a subject in one version."""

    version: str
    kind: str  # added | changed | removed
    message: str
    breaking_for_clients: bool = False
    breaking_for_servers: bool = False


@dataclass
class History:
    """Steps by subject: ("schema", name, field or "") and ("operation", "METHOD /path", "")."""

    steps: dict[tuple[str, str, str], list[Step]] = field(default_factory=dict)
    changes: dict[str, list[Change]] = field(default_factory=dict)  # version -> what changed in it
    previous: dict[str, str] = field(default_factory=dict)  # version -> the version it is compared with

    def of_schema(self, name: str, prop: str = "") -> list[Step]:
        return self.steps.get(("schema", name, prop), [])

    def of_operation(self, method: str, path: str) -> list[Step]:
        return self.steps.get(("operation", f"{method.upper()} {path}", ""), [])

    def _add(self, subject: tuple[str, str, str], step: Step) -> None:
        steps = self.steps.setdefault(subject, [])
        if step not in steps:
            steps.append(step)


def subject(pointer: str) -> tuple[tuple[str, str, str], str] | None:
    """The subject a change's pointer names, and the rest of the pointer below it."""
    if pointer.startswith(_SCHEMAS):
        parts = pointer[len(_SCHEMAS) :].split("/")
        name = unescape(parts[0])
        if len(parts) >= 3 and parts[1] == "properties":
            return ("schema", name, unescape(parts[2])), "/".join(parts[3:])
        return ("schema", name, ""), "/".join(parts[1:])
    if pointer.startswith(_PATHS):
        parts = pointer[len(_PATHS) :].split("/")
        path = unescape(parts[0])
        if len(parts) >= 2 and parts[1] in _METHODS:
            return ("operation", f"{parts[1].upper()} {path}", ""), "/".join(parts[2:])
        return ("path", path, ""), "/".join(parts[1:])
    return None


def _kind(change: Change, rest: str) -> str:
    if not rest and change.kind in ("schema-added", "property-added", "operation-added", "path-added"):
        return ADDED
    if not rest and change.kind in ("schema-removed", "property-removed", "operation-removed", "path-removed"):
        return REMOVED
    return CHANGED


def build_history(versions: Sequence[tuple[str, dict]]) -> History:
    """The history of `versions` ((name, bundled document), oldest first)."""
    history = History()
    for (before_name, before), (name, after) in zip(versions, versions[1:], strict=False):
        history.previous[name] = before_name
        kept = []
        for change in diff_documents(before, after):
            found = subject(change.pointer)
            kept.append(change)
            if found is None:
                continue
            about, rest = found
            step = Step(
                name, _kind(change, rest), change.message, change.breaking_for_clients, change.breaking_for_servers
            )
            if about[0] == "path":  # a path added or removed: each of its operations is
                for method in _METHODS:
                    operation = (after if step.kind != REMOVED else before).get("paths", {}).get(about[1], {})
                    if isinstance(operation, dict) and method in operation:
                        history._add(("operation", f"{method.upper()} {about[1]}", ""), step)
                continue
            if about[2] and step.kind != CHANGED and rest == "":
                history._add(about, step)  # the field itself came or went
                history._add((about[0], about[1], ""), Step(name, CHANGED, change.message, *_breaks(change)))
                continue
            history._add(about, step)
            if about[2]:  # a field's change is also its schema's
                history._add(
                    (about[0], about[1], ""), Step(name, CHANGED, f"`{about[2]}`: {change.message}", *_breaks(change))
                )
        history.changes[name] = kept
    return history


def _breaks(change: Change) -> tuple[bool, bool]:
    return change.breaking_for_clients, change.breaking_for_servers


def badges(steps: Sequence[Step]) -> list[Step]:
    """One step per version and kind, their messages joined: what a badge shows."""
    out: dict[tuple[str, str], Step] = {}
    for step in steps:
        key = (step.version, step.kind)
        if key in out:
            first = out[key]
            out[key] = Step(
                step.version,
                step.kind,
                f"{first.message}; {step.message}",
                first.breaking_for_clients or step.breaking_for_clients,
                first.breaking_for_servers or step.breaking_for_servers,
            )
        else:
            out[key] = step
    return list(out.values())
