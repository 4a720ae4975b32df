"""The build: load and validate the spec once, run every generator, hand the union to the writer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .bundle import Bundle, bundle
from .extensions import Fragment, extend
from .generate.docs import generate_docs
from .generate.models import generate_models
from .generate.package import PACKAGE, generate_package
from .generate.registry import generate_registry
from .generate.server import generate_server
from .problems import Level, Problem, SpecError, errors
from .releases import Release, added_in, load_releases, release_outputs
from .statemachines import StateMachines, check_state_machines
from .validate import validate
from .write import Outputs

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


@dataclass
class Spec:
    """One validated, bundled document and what validation found."""

    bundle: Bundle
    problems: list[Problem] = field(default_factory=list)
    state_machines: StateMachines | None = None
    fragments: list[Fragment] = field(default_factory=list)
    releases: list[Release] = field(default_factory=list)

    @property
    def document(self) -> dict:
        return self.bundle.document


def load_spec(path: Path, *, lenient: bool = False) -> Spec:
    """Bundle and validate. Raises SpecError unless the spec is valid (or `lenient`)."""
    spec = Spec(bundle(path))
    spec.fragments, fragment_problems = extend(spec.bundle)
    spec.state_machines, machine_problems = check_state_machines(spec.bundle)
    spec.releases, release_problems = load_releases(spec.bundle.root)
    spec.problems = fragment_problems + validate(spec.bundle) + machine_problems + release_problems
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
    outputs[f"{PACKAGE}/models.py"] = generate_models(spec.document, spec.bundle.sources).encode()
    outputs.update(generate_registry(spec.document, spec.state_machines, templates))
    outputs.update(generate_server(spec.document, templates))
    titles = {f.doc.path.stem: f.title for f in spec.fragments}
    outputs.update(
        generate_docs(added_in(spec.releases, spec.document), templates, spec.bundle.sources, spec.bundle.root_file, titles, spec.state_machines)
    )
    outputs.update(release_outputs(spec.releases))
    return dict(sorted(outputs.items()))
