"""The build: load and validate the spec once, run every generator, hand the union to the writer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .bundle import Bundle, bundle
from .generate.models import generate_models
from .generate.package import PACKAGE, generate_package
from .problems import Level, Problem, SpecError, errors
from .validate import validate
from .write import Outputs

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


@dataclass
class Spec:
    """One validated, bundled document and what validation found."""

    bundle: Bundle
    problems: list[Problem] = field(default_factory=list)

    @property
    def document(self) -> dict:
        return self.bundle.document


def load_spec(path: Path, *, lenient: bool = False) -> Spec:
    """Bundle and validate. Raises SpecError unless the spec is valid (or `lenient`)."""
    spec = Spec(bundle(path))
    spec.problems = validate(spec.bundle)
    if lenient:
        spec.problems = [Problem(p.file, p.line, p.pointer, p.message, Level.WARNING) for p in spec.problems]
    if errors(spec.problems):
        raise SpecError(spec.problems)
    return spec


def bundled_json(document: dict) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def build_outputs(spec: Spec, templates: Path = TEMPLATES) -> Outputs:
    """Every generated file, by path relative to the output directory."""
    outputs: Outputs = {"openapi.json": bundled_json(spec.document)}
    outputs.update(generate_package(spec.document, templates))
    outputs[f"{PACKAGE}/models.py"] = generate_models(spec.document).encode()
    return dict(sorted(outputs.items()))
