"""The event registry: `openresponses_runtime.events`, from the streaming union and the state machines.

The spec gives the event types and their models; `spec/state-machines.yaml` gives each its
category, what it applies to and the transition it causes. Everything from the spec passes through
`pyrepr`, as string literals, on its way into Python source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..project import CORE_STATE_MACHINES
from ..schema import SpecModel
from ..statemachines import StateMachines, item_types_with_status, load_state_machines
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


@dataclass(frozen=True)
class Protocol:
    """The tables the stream checker reads, from the state machines."""

    terminal: list[str]
    response_statuses: dict[str, tuple[str, ...]]  # lifecycle event -> the `response.status` it may carry
    item_status_types: list[str]
    opaque_fields: list[str]
    text_parts: dict[str, tuple[str, str]]  # part type -> (its text's done event, the field holding the text)
    warnings: list[str]


def protocol(machines: StateMachines, document: dict) -> Protocol:
    response = machines.machines.get("response")
    transitions = response.transitions if response else ()
    statuses: dict[str, tuple[str, ...]] = {}
    for t in transitions:
        shown = response.statuses.get(t.target, (t.target,))
        statuses[t.on] = tuple(dict.fromkeys([*statuses.get(t.on, ()), *shown]))
    item = machines.machines.get("item")
    text_parts = {}
    for machine in machines.machines.values():
        text_parts.update(machine.text_parts)
    return Protocol(
        terminal=sorted({t.on for t in transitions if t.target in response.terminal}) if response else [],
        response_statuses=dict(sorted(statuses.items())),
        item_status_types=item_types_with_status(machines, document),
        opaque_fields=sorted(item.opaque_fields) if item else [],
        text_parts=dict(sorted(text_parts.items())),
        warnings=sorted(machines.warnings),
    )


def generate_registry(model: SpecModel, templates: Path) -> dict[str, bytes]:
    env = environment(templates)
    machines, document = model.machines, model.document
    events = registry_events(model)
    rules = dict(sorted(machines.rules.items())) if machines else {}
    pattern = machines.custom_pattern.pattern if machines and machines.custom_pattern else None
    # A spec without state machines (a single upstream file) streams by the core protocol's rules.
    core = machines or load_state_machines(CORE_STATE_MACHINES)[0]
    code = env.get_template("registry/events.py.jinja").render(
        events=events,
        rules=rules,
        custom_pattern=pattern,
        protocol=protocol(core, document) if core else None,
    )
    return {OUTPUT: format_python(code, filename="events.py").encode()}
