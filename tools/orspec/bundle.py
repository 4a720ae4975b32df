"""Resolve a multi-file spec into one OpenAPI document, remembering where each part came from.

A spec is a root file (`openapi.yaml` in a spec directory, or any single OpenAPI file). Its
`components/schemas` entries may be bare `$ref`s into domain files; those become the schemas'
homes, and every other reference to the same place is rewritten to `#/components/schemas/Name`.
Any other cross-file reference is inlined. References must stay inside the spec's directory
and are never fetched from the network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from jsonpointer import escape

from .load import MAX_DEPTH, MAX_NODES, Document, display_path, load_file, too_deep
from .pointers import MISSING, resolve_pointer
from .problems import Problem, SpecError, TooBig
from .schema import schema_ref

ROOT_NAMES = ("openapi.yaml", "openapi.yml", "openapi.json")


@dataclass
class SourceMap:
    """Maps pointers in the bundled document back to (file, line) in the source files."""

    mounts: dict[str, tuple[Document, str]] = field(default_factory=dict)

    def mount(self, bundled: str, doc: Document, pointer: str) -> None:
        self.mounts[bundled] = (doc, pointer)

    def locate(self, pointer: str) -> tuple[str, int]:
        probe = pointer
        while True:
            if probe in self.mounts:
                doc, base = self.mounts[probe]
                return doc.display, doc.line_of(base + pointer[len(probe) :])
            if not probe:
                return "", 0
            probe = probe.rsplit("/", 1)[0]

    def problem(self, pointer: str, message: str, **kw: Any) -> Problem:
        file, line = self.locate(pointer)
        return Problem(file, line, pointer, message, **kw)


@dataclass
class Bundle:
    root: Path  # the spec directory
    root_file: Path
    document: dict[str, Any]
    sources: SourceMap
    files: dict[Path, Document]


def bundled_json(document: dict) -> bytes:
    """The bundled document as written to disk: indented, UTF-8, in the spec's own key order."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def find_root_file(spec: Path) -> Path:
    if spec.is_dir():
        for name in ROOT_NAMES:
            if (spec / name).is_file():
                return spec / name
        raise SpecError([Problem(display_path(spec), 0, "", "no openapi.yaml in this spec directory")])
    return spec


def bundle(spec: Path) -> Bundle:
    """Load and bundle the spec at `spec` (a directory or a file). Raises SpecError."""
    root_file = find_root_file(spec)
    return _Bundler(root_file).run()


class _Bundler:
    def __init__(self, root_file: Path):
        self.root_file = root_file.resolve()
        self.root = self.root_file.parent
        self.files: dict[Path, Document] = {}
        self.sources = SourceMap()
        self.problems: list[Problem] = []
        self.homes: dict[tuple[Path, str], str] = {}  # (file, pointer) -> component schema name
        self.count = 0  # values copied into the bundle, bounded by MAX_NODES
        self.sizes: dict[tuple[Path, str], int] = {}  # inlined target -> values one copy of it adds

    def run(self) -> Bundle:
        try:
            return self._run()
        except RecursionError:  # a last resort: each file's depth is bounded, but inlining nests files
            where = display_path(self.root_file)
            raise SpecError([Problem(where, 1, "", "references nest too deeply to bundle")]) from None

    def _run(self) -> Bundle:
        root_doc = self.load(self.root_file)
        data = root_doc.data
        if not isinstance(data, dict):
            raise SpecError([Problem(root_doc.display, 1, "", "an OpenAPI document must be a mapping")])
        self.sources.mount("", root_doc, "")
        schemas = (data.get("components") or {}).get("schemas") if isinstance(data.get("components"), dict) else None
        # First pass: schemas registered by reference get their home, so later refs point at the name.
        if isinstance(schemas, dict):
            for name, entry in schemas.items():
                if isinstance(entry, dict) and set(entry) == {"$ref"} and isinstance(entry["$ref"], str):
                    target = self.parse_ref(entry["$ref"], self.root_file, f"/components/schemas/{escape(name)}")
                    if target and target[0] != self.root_file:
                        self.homes[target] = name
        try:
            out = self.resolve(data, root_doc, "", "", ())
        except TooBig:
            raise SpecError(list(dict.fromkeys(self.problems))) from None
        if self.problems:
            raise SpecError(list(dict.fromkeys(self.problems)))  # a home's ref is checked twice
        deep = too_deep(out)
        if deep is not None:  # each file is bounded, but inlining one file's schema into another nests them
            raise SpecError(
                [self.sources.problem(deep, f"after resolving $refs, nesting is deeper than {MAX_DEPTH} levels")]
            )
        return Bundle(self.root, self.root_file, out, self.sources, self.files)

    def load(self, path: Path) -> Document:
        if path not in self.files:
            self.files[path] = load_file(path)
        return self.files[path]

    def parse_ref(self, ref: str, base: Path, at: str) -> tuple[Path, str] | None:
        """(file, pointer) for a reference written in file `base`; None (and a problem) if refused."""
        target = self.ref_target(ref, base)
        if isinstance(target, str):
            self.problems.append(self.sources.problem(f"{at}/$ref", f"$ref {ref!r}{target}"))
            return None
        return target

    def ref_target(self, ref: str, base: Path) -> tuple[Path, str] | str:
        """(file, pointer) for a reference written in file `base`, or why it is refused (to follow `$ref '…'`)."""
        try:
            parts = urlsplit(ref)
        except ValueError as exc:  # e.g. an unclosed IPv6 host: "http://[::1/x"
            return f" is not a valid reference: {exc}"
        if parts.scheme or parts.netloc:
            return " is remote; only files in the spec directory may be referenced"
        file_part, _, fragment = ref.partition("#")
        pointer = unquote(fragment)
        if pointer and not pointer.startswith("/"):
            return " has a fragment that is not a JSON pointer"
        if not file_part:
            return base, pointer
        # Only the path is examined here (resolving symlinks); nothing outside the spec directory
        # is ever opened, and nothing inside it is unless it is a regular file.
        try:
            target = (base.parent / unquote(file_part)).resolve()
            outside = not target.is_relative_to(self.root)
            regular = not outside and target.is_file()
        except (OSError, ValueError, RuntimeError) as exc:  # NUL bytes, symlink loops, names too long
            return f" is not a usable path: {exc}"
        if outside:
            return " leaves the spec directory"
        if not regular:
            return ": file not found" if not target.exists() else ": not a regular file"
        return target, pointer

    def lookup(self, doc: Document, pointer: str, ref: str, at: str) -> Any:
        node = resolve_pointer(doc.data, pointer)
        if node is MISSING:
            self.problems.append(self.sources.problem(f"{at}/$ref", f"$ref {ref!r} does not resolve"))
            return None
        return node

    def resolve(self, node: Any, doc: Document, src: str, at: str, stack: tuple[tuple[Path, str], ...]) -> Any:
        """Copy `node` (found at `src` in `doc`) to bundled pointer `at`, resolving refs."""
        self.count += 1
        if self.count > MAX_NODES:
            # Inlining the same target many times over can grow exponentially (a "billion laughs" of refs).
            self.problems.append(
                self.sources.problem(at, f"resolving $refs expands the spec to more than {MAX_NODES:,} values")
            )
            raise TooBig
        if isinstance(node, list):
            return [self.resolve(v, doc, f"{src}/{i}", f"{at}/{i}", stack) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self.resolve_ref(node, ref, doc, src, at, stack)
        out = {k: self.resolve(v, doc, f"{src}/{escape(k)}", f"{at}/{escape(k)}", stack) for k, v in node.items()}
        discriminator = out.get("discriminator")
        if isinstance(discriminator, dict) and isinstance(discriminator.get("mapping"), dict):
            mapping = discriminator["mapping"]
            for key, target in mapping.items():
                if isinstance(target, str) and ("#" in target or "/" in target):  # a bare name is a schema name
                    mapping[key] = self.mapping_target(target, doc, f"{at}/discriminator/mapping/{escape(key)}")
        return out

    def mapping_target(self, ref: str, doc: Document, at: str) -> str:
        """A discriminator mapping names a schema by reference; in the bundle, by its component name."""
        target = self.parse_ref(ref, doc.path, at)
        if target is None:
            return ref
        if target in self.homes:
            return schema_ref(self.homes[target])
        if target[0] == self.root_file:
            return f"#{target[1]}"
        self.problems.append(
            self.sources.problem(
                at, f"discriminator mapping {ref!r} must name a schema registered in components/schemas"
            )
        )
        return ref

    def resolve_ref(self, node: dict, ref: str, doc: Document, src: str, at: str, stack: tuple) -> Any:
        siblings = {
            k: self.resolve(v, doc, f"{src}/{escape(k)}", f"{at}/{escape(k)}", stack)
            for k, v in node.items()
            if k != "$ref"
        }
        target = self.parse_ref(ref, doc.path, at)
        if target is None:
            return node
        path, pointer = target
        name = self.homes.get(target)
        is_home = at == f"/components/schemas/{escape(name)}" if name else False
        if name and not is_home:
            return {"$ref": schema_ref(name), **siblings}
        if path == self.root_file and not is_home:
            # A local reference in the root document stays a reference; check it resolves.
            self.lookup(self.load(path), pointer, ref, at)
            return {"$ref": f"#{pointer}", **siblings} if pointer else node
        if target in stack:
            chain = " -> ".join(f"{display_path(p)}#{q}" for p, q in (*stack, target))
            self.problems.append(self.sources.problem(f"{at}/$ref", f"cyclic $ref: {chain}"))
            return None
        target_doc = self.load(path)
        value = self.lookup(target_doc, pointer, ref, at)
        if value is None:
            return None
        if self.count + self.inlined_size(target, set(stack)) > MAX_NODES:
            # Refs inlining the same target many times over grow exponentially (a "billion laughs" of
            # refs): refuse at the first ref that would pass the limit, before copying anything.
            self.problems.append(
                self.sources.problem(
                    f"{at}/$ref", f"resolving $refs expands the spec to more than {MAX_NODES:,} values"
                )
            )
            raise TooBig
        self.sources.mount(at, target_doc, pointer)
        resolved = self.resolve(value, target_doc, pointer, at, (*stack, target))
        if isinstance(resolved, dict) and siblings:
            resolved = {**resolved, **siblings}
        return resolved

    def inlined_size(self, target: tuple[Path, str], active: set[tuple[Path, str]]) -> int:
        """How many values inlining `target` adds, counted as `resolve` counts them, without copying."""
        size = self.sizes.get(target)
        if size is None:
            if target in active:
                return 0  # a cycle: `resolve` reports it
            value = resolve_pointer(self.load(target[0]).data, target[1])
            size = 0 if value is MISSING else self.value_size(value, target[0], active | {target})
            self.sizes[target] = size
        return size

    def value_size(self, node: Any, path: Path, active: set[tuple[Path, str]]) -> int:
        if isinstance(node, list):
            return 1 + sum(self.value_size(v, path, active) for v in node)
        if not isinstance(node, dict):
            return 1
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return 1 + sum(self.value_size(v, path, active) for v in node.values())
        size = 1 + sum(self.value_size(v, path, active) for k, v in node.items() if k != "$ref")
        target = self.ref_target(ref, path)
        if isinstance(target, tuple) and target not in self.homes and target[0] != self.root_file:
            size += self.inlined_size(target, active)  # refs to homes and to the root file stay refs
        return size
