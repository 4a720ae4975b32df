"""Read one spec file (YAML or JSON) into plain data, keeping where every value came from.

YAML is composed with PyYAML's C parser and turned into dicts and lists by hand, so that each
JSON pointer maps back to its line, duplicate keys are caught, and alias bombs stay bounded.
JSON is parsed with the standard library; its line map is only built when an error needs it.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jsonpointer import escape

from .problems import Problem, SpecError

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_NODES = 2_000_000

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
    except ValueError:
        return str(path)


def load_file(path: Path) -> Document:
    """Load a YAML or JSON file. Raises SpecError with located problems on bad input."""
    shown = display_path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SpecError([Problem(shown, 0, "", f"cannot read file: {exc.strerror}")]) from None
    if not path.is_file():
        raise SpecError([Problem(shown, 0, "", "not a regular file")])
    if size > MAX_FILE_BYTES:
        limit = MAX_FILE_BYTES // (1024 * 1024)
        raise SpecError([Problem(shown, 0, "", f"file is {size:,} bytes; the limit is {limit} MiB")])
    raw = path.read_bytes()
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


def _load_json(path: Path, shown: str, text: str) -> Document:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates.append(key)
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise SpecError([Problem(shown, exc.lineno, "", f"invalid JSON: {exc.msg}")]) from None
    except RecursionError:
        raise SpecError([Problem(shown, 1, "", "nesting is too deep to load")]) from None
    doc = Document(path, shown, data, _build_lines=lambda: _yaml_lines(text))
    if duplicates:
        # Locate duplicates through the YAML composer, which sees every key with its line.
        _, problems = _compose(text, shown)
        raise SpecError(problems or [Problem(shown, 1, "", f"duplicate key {duplicates[0]!r}")])
    return doc


def _load_yaml(path: Path, shown: str, text: str) -> Document:
    data, problems = _compose(text, shown)
    if problems:
        raise SpecError(problems)
    doc = Document(path, shown, data)
    doc._lines = _LAST_LINES.pop()
    return doc


_LAST_LINES: list[dict[str, int]] = []


def _yaml_lines(text: str) -> dict[str, int]:
    try:
        _compose(text, "")
        return _LAST_LINES.pop()
    except Exception:  # a line map is a convenience; never fail an error report over it
        return {}


def _compose(text: str, shown: str) -> tuple[Any, list[Problem]]:
    """Compose YAML into plain data, returning (data, problems) and pushing the line map."""
    try:
        nodes = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        message = " ".join(str(s) for s in (exc.context, exc.problem) if s)
        _LAST_LINES.append({})
        return None, [Problem(shown, line, "", f"invalid YAML: {message}")]
    except yaml.YAMLError as exc:
        _LAST_LINES.append({})
        return None, [Problem(shown, 0, "", f"invalid YAML: {exc}")]
    except RecursionError:
        _LAST_LINES.append({})
        return None, [Problem(shown, 1, "", "nesting is too deep to load")]
    if len(nodes) != 1:
        _LAST_LINES.append({})
        return None, [Problem(shown, 1, "", f"expected one YAML document, found {len(nodes)}")]
    builder = _Builder(shown)
    try:
        data = builder.build(nodes[0], "")
    except RecursionError:
        builder.problems.append(Problem(shown, 1, "", "nesting is too deep to load"))
        data = None
    except _TooBig:
        data = None
    _LAST_LINES.append(builder.lines)
    return data, builder.problems


class _TooBig(Exception):
    pass


class _Builder:
    """Turns composed YAML nodes into JSON-compatible data with a pointer-to-line map."""

    def __init__(self, shown: str):
        self.shown = shown
        self.lines: dict[str, int] = {}
        self.problems: list[Problem] = []
        self.count = 0
        self.active: set[int] = set()
        self.scalars = yaml.SafeLoader("")

    def build(self, node: yaml.Node, pointer: str) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            self.problems.append(
                Problem(
                    self.shown,
                    node.start_mark.line + 1,
                    pointer,
                    f"document expands to more than {MAX_NODES:,} values (YAML alias bomb?)",
                )
            )
            raise _TooBig
        self.lines.setdefault(pointer, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            value = self.scalars.construct_object(node)
            if isinstance(value, datetime.date | datetime.datetime):
                return node.value  # OpenAPI dates are strings, whatever YAML 1.1 thinks
            if isinstance(value, bytes):
                return node.value
            return value
        if id(node) in self.active:
            self.problems.append(Problem(self.shown, node.start_mark.line + 1, pointer, "recursive YAML alias"))
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, f"{pointer}/{i}") for i, item in enumerate(node.value)]
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
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
                out[key] = self.build(value_node, child)
            return out
        finally:
            self.active.discard(id(node))
