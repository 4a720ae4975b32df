"""The event registry: `openresponses_runtime.events`, from the streaming union and the state machines.

The spec gives the event types and their models; `spec/state-machines.yaml` gives each its
category, what it applies to and the transition it causes. Everything from the spec passes through
`pyrepr`, as string literals, on its way into Python source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..statemachines import StateMachines, event_types
from .package import PACKAGE, environment
from .pyformat import format_python

OUTPUT = f"{PACKAGE}/events.py"


@dataclass(frozen=True)
class RegistryEvent:
    type: str
    model: str
    summary: str
    category: str | None = None
    applies_to: str | None = None
    machine: str | None = None
    targets: tuple[str, ...] = ()
    requires: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fields: tuple[str, ...] = ()
    accumulates: tuple[str, str, str] | None = None


def registry_events(document: dict, machines: StateMachines | None) -> list[RegistryEvent]:
    out: dict[str, RegistryEvent] = {}
    for value, name, schema in event_types(document):
        if value in out or not name.isidentifier():
            continue
        summary = " ".join(str(schema.get("description") or "").split())
        place = machines.place(value) if machines else None
        if place is None:
            out[value] = RegistryEvent(value, name, summary)
            continue
        out[value] = RegistryEvent(
            value,
            name,
            summary,
            place.category,
            place.applies_to,
            place.machine,
            place.targets,
            tuple(sorted(place.requires.items())),
            place.fields,
            place.accumulates,
        )
    return list(out.values())


def generate_registry(document: dict, machines: StateMachines | None, templates: Path) -> dict[str, bytes]:
    env = environment(templates)
    events = registry_events(document, machines)
    rules = dict(sorted(machines.rules.items())) if machines else {}
    pattern = machines.custom_pattern.pattern if machines and machines.custom_pattern else None
    terminal = sorted(
        t.on
        for t in (machines.machines["response"].transitions if machines and "response" in machines.machines else ())
        if t.target in machines.machines["response"].terminal
    )
    code = env.get_template("registry/events.py.jinja").render(
        events=events,
        rules=rules,
        custom_pattern=pattern,
        terminal=terminal,
    )
    return {OUTPUT: format_python(code, filename="events.py").encode()}
