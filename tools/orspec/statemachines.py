"""The streaming protocol as data: load `spec/state-machines.yaml` and check it against the spec.

The file states the response, item, content-part and summary-part lifecycles, gives every event
type of the spec's streaming union its place (category, what it applies to, the transition it
causes, the states it needs, the fields it carries) and names the cross rules the stream checker
enforces. `load_state_machines` turns it into a small typed model that the registry generator
reads; `check_state_machines` reports, as located problems, every event type without a place,
every unreachable state and every reference to something that does not exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jsonpointer import escape

from .bundle import Bundle
from .load import Document, load_file
from .problems import Level, Problem, SpecError
from .schema import EventPlace, deref, event_union, tag_values, union_of

FILE_NAME = "state-machines.yaml"
CATEGORIES = ("lifecycle", "delta", "error", "custom")


@dataclass(frozen=True)
class Transition:
    machine: str
    on: str
    sources: tuple[str, ...] | None  # None: the transition that creates the machine
    target: str
    pointer: str


@dataclass(frozen=True)
class Machine:
    name: str
    description: str
    initial: str
    terminal: tuple[str, ...]
    states: dict[str, str]
    transitions: tuple[Transition, ...]
    statuses: dict[str, tuple[str, ...]] = field(default_factory=dict)  # state -> `status` values it shows
    status_types: tuple[str, ...] = ()  # item types whose schema carries `status`
    opaque_fields: tuple[str, ...] = ()  # left out of the terminal-output comparison
    text_parts: dict[str, tuple[str, str]] = field(default_factory=dict)  # part type -> (done event, field)


@dataclass
class StateMachines:
    document: Document
    machines: dict[str, Machine] = field(default_factory=dict)
    events: dict[str, EventPlace] = field(default_factory=dict)
    custom: EventPlace | None = None
    custom_pattern: re.Pattern[str] | None = None
    rules: dict[str, str] = field(default_factory=dict)
    categories: dict[str, str] = field(default_factory=dict)  # category -> what its events do
    warnings: tuple[str, ...] = ()  # rules whose findings are warnings

    def place(self, event_type: str) -> EventPlace | None:
        """The place of a core event, or the custom-event place for a vendor-prefixed type."""
        if event_type in self.events:
            return self.events[event_type]
        if self.custom and self.custom_pattern and self.custom_pattern.match(event_type):
            return replace(self.custom, type=event_type)
        return None

    def problem(self, pointer: str, message: str, level: Level = Level.ERROR) -> Problem:
        return Problem(self.document.display, self.document.line_of(pointer), pointer, message, level)


def find_file(bundle: Bundle) -> Path | None:
    """`state-machines.yaml` beside the root file of a spec directory, if there is one."""
    path = bundle.root / FILE_NAME
    return path if path.is_file() else None


def load_state_machines(path: Path) -> tuple[StateMachines | None, list[Problem]]:
    """Load and shape-check the file; (None, problems) if it cannot be read at all."""
    try:
        doc = load_file(path)
    except SpecError as exc:
        return None, exc.problems
    return _Reader(doc).read()


def check_state_machines(bundle: Bundle) -> tuple[StateMachines | None, list[Problem]]:
    """Load the spec's state machines and check them against its streaming union.

    A spec without the file (a single upstream OpenAPI document, say) has nothing to check.
    """
    path = find_file(bundle)
    if path is None:
        return None, []
    machines, problems = load_state_machines(path)
    if machines is None:
        return None, problems
    problems += _check_reachable(machines)
    problems += _check_against_spec(machines, bundle.document)
    return machines, sorted(set(problems), key=lambda p: (p.level != Level.ERROR, p.line, p.pointer, p.message))


def output_item_types(document: dict) -> dict[str, dict]:
    """Every item type of a response's `output` union, with its schema (allOf parts merged for `properties`)."""
    schemas = (document.get("components") or {}).get("schemas") or {}
    output = deref(((schemas.get("ResponseResource") or {}).get("properties") or {}).get("output"), document)
    union = deref((output or {}).get("items"), document) if isinstance(output, dict) else None
    found: dict[str, dict] = {}
    for variant in (union_of(union) or ("", []))[1]:
        schema = deref(variant, document)
        for value in tag_values(variant, "type", document) or []:
            if isinstance(value, str) and isinstance(schema, dict):
                found.setdefault(value, schema)
    return found


def item_types_with_status(machines: StateMachines | None, document: dict) -> list[str]:
    """The item types whose `status` the checker reads: those the machines list, and every vendor item."""
    item = machines.machines.get("item") if machines else None
    listed = set(item.status_types) if item else set()
    pattern = machines.custom_pattern if machines else None
    for value, schema in output_item_types(document).items():
        if pattern and pattern.match(value) and "status" in (schema.get("properties") or {}):
            listed.add(value)
    return sorted(listed)


class _Reader:
    """Turns the loaded file into a StateMachines, collecting shape problems."""

    def __init__(self, doc: Document):
        self.result = StateMachines(doc)
        self.problems: list[Problem] = []

    def error(self, pointer: str, message: str) -> None:
        self.problems.append(self.result.problem(pointer, message))

    def read(self) -> tuple[StateMachines, list[Problem]]:
        data = self.result.document.data
        if not isinstance(data, dict):
            self.error("", "the state machines file must be a mapping")
            return self.result, self.problems
        for key in ("machines", "events"):
            if not isinstance(data.get(key), dict):
                self.error(f"/{key}" if key in data else "", f"`{key}` must be a mapping")
        rules = data.get("rules")
        if isinstance(rules, dict):
            self.result.rules = {str(k): str(v) for k, v in rules.items()}
        elif rules is not None:
            self.error("/rules", "`rules` must map rule ids to descriptions")
        categories = data.get("categories")
        if isinstance(categories, dict):
            self.result.categories = {str(k): str(v) for k, v in categories.items()}
        elif categories is not None:
            self.error("/categories", "`categories` must map category names to descriptions")
        self.result.warnings = self.names(data.get("warnings", []), "/warnings")
        for i, rule in enumerate(self.result.warnings):
            if rule not in self.result.rules:
                self.error(f"/warnings/{i}", f"warning {rule!r} is not a rule listed under `rules`")
        for name, body in (data.get("machines") or {}).items() if isinstance(data.get("machines"), dict) else ():
            machine = self.machine(name, body, f"/machines/{escape(name)}")
            if machine:
                self.result.machines[name] = machine
        for name, body in (data.get("events") or {}).items() if isinstance(data.get("events"), dict) else ():
            place = self.event(name, body, f"/events/{escape(name)}")
            if place:
                self.result.events[name] = place
        custom = data.get("custom_events")
        if isinstance(custom, dict):
            try:
                self.result.custom_pattern = re.compile(str(custom.get("pattern", "")))
            except re.error as exc:
                self.error("/custom_events/pattern", f"not a regular expression: {exc}")
            self.result.custom = self.event("", {"transition": None, **custom}, "/custom_events")
        elif custom is not None:
            self.error("/custom_events", "`custom_events` must be a mapping")
        return self.result, self.problems

    def names(self, value: Any, pointer: str) -> tuple[str, ...]:
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in items):
            self.error(pointer, "expected a state name or a list of state names")
            return ()
        return tuple(items)

    def machine(self, name: str, body: Any, at: str) -> Machine | None:
        if not isinstance(body, dict):
            self.error(at, f"machine {name!r} must be a mapping")
            return None
        states = body.get("states")
        if not isinstance(states, dict) or not states:
            self.error(f"{at}/states", f"machine {name!r} needs a mapping of states to descriptions")
            states = {}
        initial = body.get("initial")
        if initial not in states:
            self.error(f"{at}/initial", f"initial state {initial!r} of machine {name!r} is not one of its states")
        terminal = self.names(body.get("terminal", []), f"{at}/terminal")
        for i, state in enumerate(terminal):
            if state not in states:
                self.error(
                    f"{at}/terminal/{i}", f"terminal state {state!r} of machine {name!r} is not one of its states"
                )
        transitions = []
        raw = body.get("transitions")
        if not isinstance(raw, list):
            self.error(f"{at}/transitions", f"machine {name!r} needs a list of transitions")
            raw = []
        for i, t in enumerate(raw):
            where = f"{at}/transitions/{i}"
            if not isinstance(t, dict) or not isinstance(t.get("on"), str) or not isinstance(t.get("to"), str):
                self.error(where, "a transition needs `on` (an event type) and `to` (a state)")
                continue
            sources = None if t.get("from") is None else self.names(t["from"], f"{where}/from")
            for j, state in enumerate(sources or ()):
                if state not in states:
                    self.error(f"{where}/from/{j}", f"unknown state {state!r} of machine {name!r}")
            if t["to"] not in states:
                self.error(f"{where}/to", f"unknown state {t['to']!r} of machine {name!r}")
            transitions.append(Transition(name, t["on"], sources, t["to"], where))
        statuses = {}
        raw_statuses = body.get("statuses") or {}
        if not isinstance(raw_statuses, dict):
            self.error(f"{at}/statuses", "`statuses` must map states to the status values they show")
            raw_statuses = {}
        for state, values in raw_statuses.items():
            where = f"{at}/statuses/{escape(str(state))}"
            if state not in states:
                self.error(where, f"unknown state {state!r} of machine {name!r}")
            statuses[str(state)] = self.names(values, where)
        text_parts = {}
        raw_parts = body.get("text_parts") or {}
        if not isinstance(raw_parts, dict):
            self.error(f"{at}/text_parts", "`text_parts` must map part types to {done, field}")
            raw_parts = {}
        for part, spec in raw_parts.items():
            if not isinstance(spec, dict) or not all(isinstance(spec.get(k), str) for k in ("done", "field")):
                self.error(f"{at}/text_parts/{escape(str(part))}", "a text part needs `done` (an event) and `field`")
                continue
            text_parts[str(part)] = (spec["done"], spec["field"])
        return Machine(
            name,
            str(body.get("description", "")),
            str(initial),
            terminal,
            {str(k): str(v) for k, v in states.items()},
            tuple(transitions),
            statuses,
            self.names(body.get("status_types", []), f"{at}/status_types"),
            self.names(body.get("opaque_fields", []), f"{at}/opaque_fields"),
            text_parts,
        )

    def event(self, name: str, body: Any, at: str) -> EventPlace | None:
        if not isinstance(body, dict):
            self.error(at, f"event {name!r} must be a mapping")
            return None
        category = body.get("category")
        if category not in CATEGORIES:
            self.error(f"{at}/category", f"category {category!r} is not one of {', '.join(CATEGORIES)}")
        applies_to = body.get("applies_to")
        if not isinstance(applies_to, str):
            self.error(f"{at}/applies_to", "`applies_to` must name a machine")
            applies_to = ""
        machine, targets = None, ()
        transition = body.get("transition")
        if isinstance(transition, dict):
            machine = transition.get("machine")
            targets = self.names(transition.get("to"), f"{at}/transition/to")
        elif transition is not None:
            self.error(f"{at}/transition", "`transition` must be null or {machine, to}")
        requires: dict[str, tuple[str, ...]] = {}
        raw = body.get("requires") or {}
        if isinstance(raw, dict):
            for key, value in raw.items():
                requires[str(key)] = self.names(value, f"{at}/requires/{escape(str(key))}")
        else:
            self.error(f"{at}/requires", "`requires` must map machines to states")
        fields = body.get("fields") or []
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            self.error(f"{at}/fields", "`fields` must be a list of field names")
            fields = []
        accumulates = None
        acc = body.get("accumulates")
        if isinstance(acc, dict) and all(isinstance(acc.get(k), str) for k in ("field", "done", "done_field")):
            accumulates = (acc["field"], acc["done"], acc["done_field"])
        elif acc is not None:
            self.error(f"{at}/accumulates", "`accumulates` needs `field`, `done` and `done_field`")
        return EventPlace(name, str(category), applies_to, machine, targets, requires, tuple(fields), accumulates, at)


def _check_reachable(sm: StateMachines) -> list[Problem]:
    """Every state of every machine can be reached from its creating transition."""
    problems = []
    for name, machine in sm.machines.items():
        at = f"/machines/{escape(name)}"
        reached = {t.target for t in machine.transitions if t.sources is None}
        if not reached:
            problems.append(
                sm.problem(f"{at}/transitions", f"machine {name!r} has no transition with `from: null` that creates it")
            )
        elif machine.initial not in reached:
            problems.append(
                sm.problem(
                    f"{at}/initial",
                    f"machine {name!r} is created in {sorted(reached)}, not in its initial state {machine.initial!r}",
                )
            )
        changed = True
        while changed:
            changed = False
            for t in machine.transitions:
                if t.target not in reached and t.sources and reached.intersection(t.sources):
                    reached.add(t.target)
                    changed = True
        for state in machine.states:
            if state not in reached:
                problems.append(
                    sm.problem(
                        f"{at}/states/{escape(state)}",
                        f"state {state!r} of machine {name!r} is unreachable: no transition leads "
                        "to it from the initial state",
                    )
                )
        for part, (done, _) in machine.text_parts.items():
            if done not in sm.events:
                problems.append(
                    sm.problem(
                        f"{at}/text_parts/{escape(part)}/done",
                        f"text part {part!r} is closed by {done!r}, which is not an event listed under `events`",
                    )
                )
        for t in machine.transitions:
            if t.on not in sm.events:
                problems.append(
                    sm.problem(
                        f"{t.pointer}/on", f"transition on {t.on!r}, which is not an event listed under `events`"
                    )
                )
    for place in [*sm.events.values(), *([sm.custom] if sm.custom else [])]:
        if place.applies_to and place.applies_to not in sm.machines:
            problems.append(
                sm.problem(f"{place.pointer}/applies_to", f"`applies_to` names unknown machine {place.applies_to!r}")
            )
        if place.machine is not None:
            machine = sm.machines.get(place.machine)
            if machine is None:
                problems.append(
                    sm.problem(
                        f"{place.pointer}/transition/machine", f"transition names unknown machine {place.machine!r}"
                    )
                )
            else:
                declared = {t.target for t in machine.transitions if t.on == place.type}
                for state in place.targets:
                    if state not in declared:
                        problems.append(
                            sm.problem(
                                f"{place.pointer}/transition/to",
                                f"{place.type!r} moves {place.machine!r} to {state!r}, but the "
                                "machine has no such transition on it",
                            )
                        )
        for key, states in place.requires.items():
            machine = sm.machines.get(key)
            if machine is None:
                problems.append(sm.problem(f"{place.pointer}/requires/{escape(key)}", f"unknown machine {key!r}"))
                continue
            for state in states:
                if state not in machine.states:
                    problems.append(
                        sm.problem(
                            f"{place.pointer}/requires/{escape(key)}", f"unknown state {state!r} of machine {key!r}"
                        )
                    )
        if place.accumulates and place.accumulates[1] not in sm.events:
            problems.append(
                sm.problem(
                    f"{place.pointer}/accumulates/done",
                    f"`.done` event {place.accumulates[1]!r} is not listed under `events`",
                )
            )
    return problems


def _check_item_status(sm: StateMachines, document: dict) -> list[Problem]:
    """`status_types` lists exactly the core item types whose schema has a required `status`."""
    item = sm.machines.get("item")
    items = output_item_types(document)
    if item is None or not items:
        return []
    at = "/machines/item/status_types"
    problems = []
    for i, value in enumerate(item.status_types):
        schema = items.get(value)
        if schema is None:
            problems.append(sm.problem(f"{at}/{i}", f"item type {value!r} is not in the response's output union"))
        elif "status" not in (schema.get("properties") or {}):
            problems.append(sm.problem(f"{at}/{i}", f"item type {value!r} has no `status` property in the spec"))
    for value, schema in sorted(items.items()):
        vendor = sm.custom_pattern is not None and sm.custom_pattern.match(value)
        if not vendor and "status" in (schema.get("required") or []) and value not in item.status_types:
            problems.append(
                sm.problem(at, f"item type {value!r} requires `status` in the spec; list it under `status_types`")
            )
    return problems


def _check_against_spec(sm: StateMachines, document: dict) -> list[Problem]:
    """Every event type of the streaming union has a place, and carries the fields it is said to."""
    problems = []
    union = event_union(document)
    if not union:
        return [sm.problem("", "the spec has no `text/event-stream` union of events to place", Level.WARNING)]
    in_spec = set()
    for value, name, schema in union:
        in_spec.add(value)
        place = sm.place(value)
        if place is None:
            problems.append(
                sm.problem(
                    "/events",
                    f"event type {value!r} (schema {name}) of the streaming union has "
                    "no place in the state machines; add it under `events`",
                )
            )
            continue
        properties = schema.get("properties") or {}
        for i, name_ in enumerate(place.fields):
            if name_ not in properties and place is sm.events.get(value):
                problems.append(
                    sm.problem(
                        f"{place.pointer}/fields/{i}",
                        f"{value!r} is said to carry {name_!r}, but schema {name} has no such property",
                    )
                )
    problems += _check_item_status(sm, document)
    for value, place in sm.events.items():
        if value not in in_spec:
            problems.append(
                sm.problem(place.pointer, f"event type {value!r} is not in the spec's streaming union", Level.WARNING)
            )
    return problems
