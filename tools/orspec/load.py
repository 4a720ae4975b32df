"""Read one spec file (YAML or JSON) into plain data, keeping where every value came from.

YAML is parsed with PyYAML's C parser into events, and orspec composes those events itself,
without recursion, so that each JSON pointer maps back to its line, duplicate keys are caught,
nesting depth is bounded (libyaml's own composer recurses in C and crashes on deep input), and so
are the nodes composed (`MAX_YAML_NODES`: composing costs microseconds a node) and alias bombs. JSON is parsed with the standard library; its line map is only built
when an error needs it.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jsonpointer import escape

from .problems import Problem, SpecError, TooBig

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_NODES = 2_000_000
# Nodes composed from YAML text. Each costs some microseconds of Python, so this keeps a garbage file
# (18 MB of `[a, a, ...`) to a located error within seconds; real specs have a few tens of thousands,
# and a larger one loads from JSON, which the standard library parses in C, with no such bound.
MAX_YAML_NODES = 500_000
MAX_DEPTH = 64  # real specs nest about 20 deep; later stages recurse (jsonschema about 8 frames a level)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ENDS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


@dataclass
class Document:
    """One loaded file: its data and a lazily built map from JSON pointer to line number."""

    path: Path
    display: str
    data: Any
    _lines: dict[str, int] | None = None
    _build_lines: Callable[[], dict[str, int]] | None = field(default=None, repr=False)

    def line_of(self, pointer: str) -> int:
        """The line of `pointer`, or of its nearest ancestor that has one (0 if unknown)."""
        if self._lines is None:
            self._lines = self._build_lines() if self._build_lines else {}
        while True:
            if pointer in self._lines:
                return self._lines[pointer]
            if not pointer:
                return 0
            pointer = pointer.rsplit("/", 1)[0]


def display_path(path: Path) -> str:
    """A path as users should see it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):
        return str(path)


def load_file(path: Path) -> Document:
    """Load a YAML or JSON file. Raises SpecError with located problems on bad input."""
    shown = display_path(path)
    try:
        size = path.stat().st_size
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SpecError([Problem(shown, 0, "", f"cannot read file: {reason}")]) from None
    if not path.is_file():
        raise SpecError([Problem(shown, 0, "", "not a regular file")])
    if size > MAX_FILE_BYTES:
        limit = MAX_FILE_BYTES // (1024 * 1024)
        raise SpecError([Problem(shown, 0, "", f"file is {size:,} bytes; the limit is {limit} MiB")])
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)  # the file may have grown since stat
    except OSError as exc:
        raise SpecError([Problem(shown, 0, "", f"cannot read file: {exc.strerror}")]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError([Problem(shown, 0, "", f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError([Problem(shown, line, "", f"not valid UTF-8 (byte offset {exc.start})")]) from None
    if not text.strip():
        raise SpecError([Problem(shown, 1, "", "file is empty")])
    if path.suffix.lower() == ".json":
        return _load_json(path, shown, text)
    return _load_yaml(path, shown, text)


class _BadJSON(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadJSON(f"{name} is not valid JSON")


def _load_json(path: Path, shown: str, text: str) -> Document:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates.append(key)
            out[key] = value
        return out

    def number(literal: str) -> float:
        value = float(literal)
        if math.isinf(value):
            shown = literal if len(literal) <= 24 else literal[:24] + "…"
            raise _BadJSON(f"number {shown} is out of range")
        return value

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=_reject_constant, parse_float=number)
    except json.JSONDecodeError as exc:
        raise SpecError([Problem(shown, exc.lineno, "", f"invalid JSON: {exc.msg}")]) from None
    except RecursionError:
        raise SpecError([_json_too_deep(shown, text)]) from None
    except ValueError as exc:  # a constant like NaN, an integer too long to convert
        line = _json_error_line(text, exc)
        raise SpecError([Problem(shown, line, "", f"invalid JSON: {exc}")]) from None
    if _depth_exceeds(data, MAX_DEPTH):
        raise SpecError([_json_too_deep(shown, text)])
    doc = Document(path, shown, data, _build_lines=lambda: _json_lines(text))
    if duplicates:
        # Locate duplicates through the YAML composer, which sees every key with its line.
        _, problems, _ = _compose(text, shown)
        located = [p for p in problems if p.message.startswith("duplicate key")]  # not the YAML node bound
        raise SpecError(located or [Problem(shown, 1, "", f"duplicate key {duplicates[0]!r}")])
    return doc


def _json_error_line(text: str, exc: ValueError) -> int:
    """The line of the first NaN/Infinity or over-long integer, for errors json gives no position for."""
    found = re.search(r"-?\b(?:NaN|Infinity)\b|\d{4000,}|\d[\d.]*[eE][+-]?\d{3,}", text)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def _depth_exceeds(data: Any, limit: int) -> bool:
    return too_deep(data, limit) is not None


def too_deep(data: Any, limit: int = MAX_DEPTH) -> str | None:
    """The pointer of the first collection nested deeper than `limit`, or None."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, pointer, depth = stack.pop()
        if depth > limit:
            return pointer
        if isinstance(value, dict):
            items = ((f"{pointer}/{escape(k)}", v) for k, v in value.items())
        elif isinstance(value, list):
            items = ((f"{pointer}/{i}", v) for i, v in enumerate(value))
        else:
            continue
        stack.extend((v, at, depth + 1) for at, v in items if isinstance(v, dict | list))
    return None


def _json_too_deep(shown: str, text: str) -> Problem:
    """Find where JSON nesting first exceeds MAX_DEPTH, skipping brackets inside strings."""
    depth = 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                return Problem(shown, line, "", f"nesting is deeper than {MAX_DEPTH} levels")
        elif token in "]}":
            depth -= 1
    return Problem(shown, 1, "", f"nesting is deeper than {MAX_DEPTH} levels")


# YAML's quoted scalars and comments, which may hold brackets, and its flow brackets.
_YAML_FLOW_TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'|(?:^|(?<=\s))#[^\n]*|[\[\]{}]", re.MULTILINE)


def _flow_too_deep(text: str, shown: str, end: int) -> Problem | None:
    """Our located problem when flow brackets before `end` nest deeper than MAX_DEPTH, else None.

    libyaml refuses deep flow nesting in its scanner, before the composer sees the levels we count, and
    in words of its own that change between releases; this finds the same fault where it starts.
    """
    depth = 0
    for match in _YAML_FLOW_TOKEN.finditer(text, 0, end):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                # The composer, given the text up to here, reports it with its pointer.
                try:
                    _, problem = _compose_nodes(text[: match.end()], shown)
                except yaml.YAMLError:
                    problem = None
                line = text.count("\n", 0, match.start()) + 1
                return problem or Problem(shown, line, "", f"nesting is deeper than {MAX_DEPTH} levels")
        elif token in "]}":
            depth -= 1
    return None


def _load_yaml(path: Path, shown: str, text: str) -> Document:
    data, problems, lines = _compose(text, shown)
    if problems:
        raise SpecError(problems)
    return Document(path, shown, data, _lines=lines)


def _yaml_lines(text: str) -> dict[str, int]:
    try:
        return _compose(text, "")[2]
    except Exception:  # a line map is a convenience; never fail an error report over it
        return {}


# JSON's tokens, and the line breaks YAML counts (the line numbers stay those `_yaml_lines` gives).
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+')
_YAML_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def _json_lines(text: str) -> dict[str, int]:
    """The pointer-to-line map of a JSON document that `json` already parsed (no duplicate keys).

    The same map as composing the text as YAML (`_yaml_lines`): each key's line for a member,
    each value's first line otherwise. A token scan is some twenty times faster, which matters
    when a large spec has findings to locate.
    """
    try:
        return _scan_json_lines(text)
    except Exception:  # a line map is a convenience; never fail an error report over it
        return _yaml_lines(text)


def _scan_json_lines(text: str) -> dict[str, int]:
    lines: dict[str, int] = {}
    breaks = [m.end() for m in _YAML_BREAK.finditer(text)]
    # Open containers: [pointer, next index (arrays) or None (objects), pointer of the pending member].
    stack: list[list[Any]] = []
    line = 1  # the line the next token is on: `breaks[line - 1]` is where the line after it starts
    for match in _JSON_TOKEN.finditer(text):
        start = match.start()
        while line - 1 < len(breaks) and breaks[line - 1] <= start:
            line += 1
        token = match.group()
        if token in (",", "]", "}", ":"):
            if token in "]}":
                stack.pop()
            continue
        frame = stack[-1] if stack else None
        if frame is None:
            at = ""
        elif frame[1] is None:  # an object: a key, or the value of the pending member
            if frame[2] is None:
                at = f"{frame[0]}/{escape(json.loads(token))}"
                lines.setdefault(at, line)
                frame[2] = at
                continue
            at, frame[2] = frame[2], None
        else:
            at = f"{frame[0]}/{frame[1]}"
            frame[1] += 1
        lines.setdefault(at, line)
        if token == "{":
            stack.append([at, None, None])
        elif token == "[":
            stack.append([at, 0, None])
    return lines


def _compose(text: str, shown: str) -> tuple[Any, list[Problem], dict[str, int]]:
    """Compose YAML into plain data: (data, problems, pointer-to-line map)."""
    try:
        nodes, problem = _compose_nodes(text, shown)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        too_deep_problem = _flow_too_deep(text, shown, mark.index if mark else len(text))
        if too_deep_problem:  # the parser gave up on the nesting itself; say it in our words
            return None, [too_deep_problem], {}
        line = mark.line + 1 if mark else 1
        message = " ".join(str(s) for s in (exc.context, exc.problem) if s)
        return None, [Problem(shown, line, "", f"invalid YAML: {message}")], {}
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        return None, [Problem(shown, line, "", f"invalid YAML: {exc.reason} (U+{char:04X})")], {}
    except yaml.YAMLError as exc:
        return None, [Problem(shown, 1, "", f"invalid YAML: {exc}")], {}
    if problem:
        return None, [problem], {}
    if not nodes:
        return None, [Problem(shown, 1, "", "file has no content (only comments or directives)")], {}
    if len(nodes) != 1:
        line = nodes[1].start_mark.line + 1
        return None, [Problem(shown, line, "", f"expected one YAML document, found {len(nodes)}")], {}
    builder = _Builder(shown)
    try:
        data = builder.build(nodes[0], "", 1)
    except RecursionError:  # cannot happen with MAX_DEPTH bounded; a last resort all the same
        builder.problems.append(Problem(shown, 1, "", "nesting is too deep to load"))
        data = None
    except TooBig:
        data = None
    return data, builder.problems, builder.lines


def _compose_nodes(text: str, shown: str) -> tuple[list[yaml.Node], Problem | None]:
    """YAML documents as node graphs, composed from parser events with an explicit stack."""
    parser = _Loader(text)
    documents: list[yaml.Node] = []
    composed = 0
    try:
        parser.get_event()  # StreamStartEvent
        while not parser.check_event(yaml.StreamEndEvent):
            parser.get_event()  # DocumentStartEvent
            anchors: dict[str, yaml.Node] = {}
            # Open collections, each with the key node awaiting its value (mappings only).
            stack: list[list[Any]] = []
            root: yaml.Node | None = None
            while root is None:
                event = parser.get_event()
                composed += not isinstance(event, _ENDS)
                if composed > MAX_YAML_NODES:
                    message = f"more than {MAX_YAML_NODES:,} YAML nodes; a spec this large loads from JSON"
                    return [], Problem(shown, event.start_mark.line + 1, _stack_pointer(stack), message)
                node: yaml.Node
                if isinstance(event, yaml.AliasEvent):
                    if event.anchor not in anchors:
                        raise yaml.composer.ComposerError(
                            None, None, f"found undefined alias {event.anchor!r}", event.start_mark
                        )
                    node = anchors[event.anchor]
                elif isinstance(event, yaml.ScalarEvent):
                    tag = event.tag
                    if tag is None or tag == "!":
                        tag = parser.resolve(yaml.ScalarNode, event.value, event.implicit)
                    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
                    kind = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
                    tag = event.tag
                    if tag is None or tag == "!":
                        tag = parser.resolve(kind, None, event.implicit)
                    node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
                    if event.anchor is not None:
                        anchors[event.anchor] = node
                    _attach(stack, node)
                    stack.append([node, None])
                    if len(stack) > MAX_DEPTH:
                        pointer = _stack_pointer(stack)
                        line = event.start_mark.line + 1
                        return [], Problem(shown, line, pointer, f"nesting is deeper than {MAX_DEPTH} levels")
                    continue
                elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                    node = stack.pop()[0]
                    node.end_mark = event.end_mark
                    if not stack:
                        root = node
                    continue
                else:  # pragma: no cover - the parser only emits the events above here
                    raise yaml.composer.ComposerError(None, None, f"unexpected {event}", event.start_mark)
                if isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
                    anchors[event.anchor] = node
                if stack:
                    _attach(stack, node)
                else:
                    root = node
            parser.get_event()  # DocumentEndEvent
            documents.append(root)
        return documents, None
    finally:
        parser.dispose()


def _attach(stack: list[list[Any]], node: yaml.Node) -> None:
    if not stack:
        return
    frame = stack[-1]
    parent = frame[0]
    if isinstance(parent, yaml.SequenceNode):
        parent.value.append(node)
    elif frame[1] is None:
        frame[1] = node
    else:
        parent.value.append((frame[1], node))
        frame[1] = None


def _stack_pointer(stack: list[list[Any]]) -> str:
    """The JSON pointer of the innermost open collection, for a problem report."""
    parts = []
    for i in range(1, len(stack)):
        parent, pending = stack[i - 1]
        if isinstance(parent, yaml.SequenceNode):
            parts.append(str(len(parent.value) - 1))
        else:
            key = parent.value[-1][0] if pending is None and parent.value else None
            parts.append(escape(key.value) if isinstance(key, yaml.ScalarNode) else "?")
    return "".join(f"/{p}" for p in parts)


class _Builder:
    """Turns composed YAML nodes into JSON-compatible data with a pointer-to-line map."""

    def __init__(self, shown: str):
        self.shown = shown
        self.lines: dict[str, int] = {}
        self.problems: list[Problem] = []
        self.count = 0
        self.active: set[int] = set()
        self.built: set[int] = set()  # nodes built once; building one again is an alias use
        self.sizes: dict[int, int] = {}  # node -> values building it adds
        self.scalars = yaml.SafeLoader("")

    def stop(self, node: yaml.Node, pointer: str, message: str) -> TooBig:
        self.problems.append(Problem(self.shown, node.start_mark.line + 1, pointer, message))
        return TooBig()

    def build(self, node: yaml.Node, pointer: str, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.stop(node, pointer, f"document expands to more than {MAX_NODES:,} values (YAML alias bomb?)")
        self.lines.setdefault(pointer, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, pointer)
        if depth > MAX_DEPTH:  # aliases can nest deeper than the text does
            raise self.stop(node, pointer, f"nesting is deeper than {MAX_DEPTH} levels")
        if not node.tag.startswith("tag:yaml.org,2002:") or node.tag.rsplit(":", 1)[1] not in ("seq", "map"):
            self.problems.append(
                Problem(self.shown, node.start_mark.line + 1, pointer, f"unsupported YAML tag {node.tag!r}")
            )
            return None
        if id(node) in self.active:
            self.problems.append(Problem(self.shown, node.start_mark.line + 1, pointer, "recursive YAML alias"))
            return None
        if id(node) in self.built and self.count - 1 + self.size(node, set()) > MAX_NODES:
            # Aliases of aliases grow exponentially: refuse at the first alias that would pass the limit.
            raise self.stop(node, pointer, f"document expands to more than {MAX_NODES:,} values (YAML alias bomb?)")
        self.built.add(id(node))
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, f"{pointer}/{i}", depth + 1) for i, item in enumerate(node.value)]
            out: dict[str, Any] = {}
            merges: list[yaml.Node] = []
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    merges.append(value_node)
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    self.problems.append(
                        Problem(self.shown, key_node.start_mark.line + 1, pointer, "mapping keys must be strings")
                    )
                    continue
                key = key_node.value
                child = f"{pointer}/{escape(key)}"
                if key in out:
                    self.problems.append(
                        Problem(self.shown, key_node.start_mark.line + 1, child, f"duplicate key {key!r}")
                    )
                    continue
                self.lines[child] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, child, depth + 1)
            return self.merge(merges, pointer, depth, out) if merges else out
        finally:
            self.active.discard(id(node))

    def size(self, node: yaml.Node, active: set[int]) -> int:
        """How many values building `node` adds, counted as `build` counts them, without building."""
        if isinstance(node, yaml.ScalarNode):
            return 1
        known = self.sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in active:
            return 0  # a recursive alias: `build` reports it
        active.add(id(node))
        children = node.value if isinstance(node, yaml.SequenceNode) else [value for _, value in node.value]
        total = 1 + sum(self.size(child, active) for child in children)
        active.discard(id(node))
        self.sizes[id(node)] = total
        return total

    def merge(self, merges: list[yaml.Node], pointer: str, depth: int, explicit: dict[str, Any]) -> dict[str, Any]:
        """Apply YAML merge keys (`<<: *base`): keys written here win, then earlier merges."""
        merged: dict[str, Any] = {}
        for value_node in merges:
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    line = source.start_mark.line + 1
                    self.problems.append(Problem(self.shown, line, pointer, "a merge key (<<) needs a mapping"))
                    continue
                own_lines, self.lines = self.lines, {}
                try:
                    value = self.build(source, pointer, depth)
                finally:
                    merged_lines, self.lines = self.lines, own_lines
                for at, line in merged_lines.items():
                    self.lines.setdefault(at, line)
                if isinstance(value, dict):
                    for key, item in value.items():
                        merged.setdefault(key, item)
        return {**merged, **explicit}

    def scalar(self, node: yaml.ScalarNode, pointer: str) -> Any:
        line = node.start_mark.line + 1
        if node.tag.startswith("tag:yaml.org,2002:") and node.tag.rsplit(":", 1)[1] in _SCALAR_TAGS:
            try:
                value = self.scalars.construct_object(node)
            except (yaml.YAMLError, ValueError, OverflowError) as exc:
                detail = getattr(exc, "problem", None) or str(exc)
                self.problems.append(Problem(self.shown, line, pointer, f"invalid {node.tag} value: {detail}"))
                return None
        else:
            self.problems.append(Problem(self.shown, line, pointer, f"unsupported YAML tag {node.tag!r}"))
            return None
        if isinstance(value, datetime.date | datetime.datetime):
            return node.value  # OpenAPI dates are strings, whatever YAML 1.1 thinks
        if isinstance(value, bytes):
            return node.value
        if isinstance(value, float) and not math.isfinite(value):
            self.problems.append(Problem(self.shown, line, pointer, f"{node.value!r} has no JSON equivalent"))
            return None
        return value


_SCALAR_TAGS = {"str", "int", "float", "bool", "null", "timestamp", "binary"}
