"""The event registry: `openresponses_runtime.events`, from the streaming union and the state machines.

The spec gives the event types and their models; `spec/state-machines.yaml` gives each its
category, what it applies to and the transition it causes. Everything from the spec passes through
`pyrepr`, as string literals, on its way into Python source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..schema import SpecModel
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


def registry_events(model: SpecModel) -> list[RegistryEvent]:
    out: dict[str, RegistryEvent] = {}
    for event in model.events:
        if event.type in out or not event.schema.isidentifier():
            continue
        summary = " ".join(str(event.node.get("description") or "").split())
        place = event.place
        if place is None:
            out[event.type] = RegistryEvent(event.type, event.schema, summary)
            continue
        out[event.type] = RegistryEvent(
            event.type,
            event.schema,
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


def generate_registry(model: SpecModel, templates: Path) -> dict[str, bytes]:
    env = environment(templates)
    machines = model.machines
    events = registry_events(model)
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
