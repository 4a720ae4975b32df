"""The build: load and validate the spec once, run every generator, hand the union to the writer."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .bundle import Bundle, bundle, bundled_json
from .cache import Stamp, digest, stage_key
from .extensions import Fragment, extend
from .generate.docs import generate_docs
from .generate.models import generate_models
from .generate.package import PACKAGE, generate_package
from .generate.registry import generate_registry
from .generate.server import generate_server
from .problems import Level, Problem, SpecError, errors
from .project import TEMPLATES
from .releases import Release, added_in, load_releases, release_outputs
from .statemachines import StateMachines, check_state_machines
from .write import Outputs


@dataclass
class Spec:
    """One validated, bundled document and what validation found."""

    bundle: Bundle
    problems: list[Problem] = field(default_factory=list)
    state_machines: StateMachines | None = None
    fragments: list[Fragment] = field(default_factory=list)
    releases: list[Release] = field(default_factory=list)
    pending: Future[list[Problem]] | None = None  # a validation left running by `load_spec`
    conclude: Callable[[list[Problem]], None] | None = None

    @property
    def document(self) -> dict:
        return self.bundle.document

    def settle(self, *, wait: bool = True) -> None:
        """Take the verdict of a validation left running by `load_spec(..., background=True)`:
        fill in `problems`, or raise its SpecError. With `wait=False`, only if it has finished."""
        if self.pending is None or not (wait or self.pending.done()):
            return
        pending, self.pending = self.pending, None
        self.conclude(pending.result())


def load_spec(
    path: Path, *, lenient: bool = False, known_problems: list[Problem] | None = None, background: bool = False
) -> Spec:
    """Bundle and validate. Raises SpecError unless the spec is valid (or `lenient`).

    `known_problems` are the findings of an earlier run on byte-identical inputs; passing them
    skips validation, the slowest part of loading. `background`: validate in a child process
    while the caller goes on (to generate); the caller must call `spec.settle()` before it uses
    `problems` or writes anything.
    """
    spec = Spec(bundle(path))
    spec.fragments, fragment_problems = extend(spec.bundle)
    spec.state_machines, machine_problems = check_state_machines(spec.bundle)
    spec.releases, release_problems = load_releases(spec.bundle.root)
    if known_problems is not None:
        spec.problems = list(known_problems)
        return spec

    def conclude(found: list[Problem]) -> None:
        spec.problems = fragment_problems + found + machine_problems + release_problems
        if lenient:
            spec.problems = [Problem(p.file, p.line, p.pointer, p.message, Level.WARNING) for p in spec.problems]
        if errors(spec.problems):
            raise SpecError(spec.problems)

    if not background:
        from .validate import validate

        conclude(validate(spec.bundle))
        return spec
    spec.pending, spec.conclude = _validate_in_child(path), conclude
    return spec


def _validate_in_child(path: Path) -> Future[list[Problem]]:
    # A fresh interpreter (not a fork, whose copy of this process's memory would count twice)
    # bundles the spec again, cheaply, and runs the slow part: the OpenAPI schema checks.
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        return pool.submit(_bundle_and_validate, path)
    finally:
        pool.shutdown(wait=False)


def _bundle_and_validate(path: Path) -> list[Problem]:
    from .validate import validate

    spec = bundle(path)
    extend(spec)
    return validate(spec)


@dataclass(frozen=True)
class Stage:
    """One generator: the inputs it reads (fingerprint names, see cache.py) and how it runs."""

    name: str
    inputs: tuple[str, ...]
    run: Callable[[Spec, Path], Outputs]


def _docs(spec: Spec, templates: Path) -> Outputs:
    titles = {f.doc.path.stem: f.title for f in spec.fragments}
    document = added_in(spec.releases, spec.document)
    return generate_docs(document, templates, spec.bundle.sources, spec.bundle.root_file, titles, spec.state_machines)


STAGES = (
    Stage("bundle", ("spec", "tool"), lambda spec, _: {"openapi.json": bundled_json(spec.document)}),
    Stage(
        "package",
        ("spec", "tool", "templates/package", "templates/runtime"),
        lambda spec, t: generate_package(spec.document, t),
    ),
    Stage(
        "models",
        ("spec", "tool"),
        lambda spec, _: {f"{PACKAGE}/models.py": generate_models(spec.document, spec.bundle.sources).encode()},
    ),
    Stage(
        "registry",
        ("spec", "tool", "templates/registry"),
        lambda spec, t: generate_registry(spec.document, spec.state_machines, t),
    ),
    Stage("server", ("spec", "tool", "templates/server"), lambda spec, t: generate_server(spec.document, t)),
    Stage("docs", ("spec", "tool", "templates/docs"), _docs),
    Stage("releases", ("spec", "tool"), lambda spec, _: release_outputs(spec.releases)),
)


def build_outputs(spec: Spec, templates: Path = TEMPLATES) -> Outputs:
    """Every generated file, by path relative to the output directory."""
    return run_stages(spec, templates)[0]


def run_stages(
    spec: Spec,
    templates: Path = TEMPLATES,
    *,
    inputs: dict[str, str] | None = None,
    previous: Stamp | None = None,
    out: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Outputs, dict[str, dict], list[str]]:
    """Run every stage, reusing from `out` what `previous` says is unchanged.

    Returns the outputs, a record per stage for the next stamp, and the names of the stages run.
    """
    outputs: Outputs = {}
    records: dict[str, dict] = {}
    ran: list[str] = []
    for stage in STAGES:
        spec.settle(wait=False)  # a spec found invalid meanwhile stops the build at once
        key = stage_key(inputs, stage.inputs) if inputs is not None else ""
        reused = previous.reusable(stage.name, key, out) if previous and out and inputs is not None else None
        if reused is None:
            started = time.perf_counter()
            if progress:
                progress(f"{stage.name} ...")
            produced = stage.run(spec, templates)
            if progress:
                progress(f"{stage.name} {time.perf_counter() - started:.1f}s")
            ran.append(stage.name)
        else:
            produced = reused
        clash = set(produced) & set(outputs)
        if clash:
            raise ValueError(f"stage {stage.name} writes {sorted(clash)[0]}, which another stage wrote")
        outputs.update(produced)
        records[stage.name] = {"key": key, "files": {p: digest(d) for p, d in sorted(produced.items())}}
    return dict(sorted(outputs.items())), records, ran
