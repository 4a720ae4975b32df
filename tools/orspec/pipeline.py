"""The build: load and validate the spec once, run every generator, hand the union to the writer."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .bundle import Bundle, bundle, bundled_json
from .cache import Stamp, digest, stage_key
from .extensions import Fragment, extend
from .generate.client import generate_client, generate_client_reference
from .generate.docs import generate_docs
from .generate.models import generate_models
from .generate.package import PACKAGE, generate_package
from .generate.registry import generate_registry
from .generate.server import check_handlers, generate_server
from .problems import Level, Problem, SpecError, errors
from .project import TEMPLATES
from .releases import Release, load_releases, release_outputs
from .schema import SpecModel, build
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
    model: SpecModel | None = None  # the typed view every stage reads; set by `load_spec`
    path: Path | None = None  # what `load_spec` read
    pending: Callable[[], None] | None = None  # the validation `load_spec(..., background=True)` left to do

    @property
    def document(self) -> dict:
        return self.bundle.document

    def settle(self) -> None:
        """Run the validation `load_spec(..., background=True)` left to do: fill in `problems`, or
        raise its SpecError. Nothing to do otherwise, or the second time."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending()


def load_spec(
    path: Path, *, lenient: bool = False, known_problems: list[Problem] | None = None, background: bool = False
) -> Spec:
    """Bundle and validate. Raises SpecError unless the spec is valid (or `lenient`).

    `known_problems` are the findings of an earlier run on byte-identical inputs; passing them
    skips validation, the slowest part of loading. `background`: leave validation to
    `run_stages`, which runs it while the slowest generator works in a child process; the caller
    calls `spec.settle()` before it uses `problems` or writes anything.
    """
    spec = Spec(bundle(path), path=path)
    spec.fragments, fragment_problems = extend(spec.bundle)
    spec.state_machines, machine_problems = check_state_machines(spec.bundle)
    spec.releases, release_problems = load_releases(spec.bundle.root)
    spec.model = build(spec.document, spec.state_machines, spec.releases)
    if known_problems is not None:
        spec.problems = list(known_problems)
        return spec

    def conclude() -> None:
        from .validate import validate

        spec.problems = fragment_problems + validate(spec.bundle) + machine_problems + release_problems
        spec.problems += check_handlers(spec.model, spec.bundle.sources)
        if lenient:
            spec.problems = [Problem(p.file, p.line, p.pointer, p.message, Level.WARNING) for p in spec.problems]
        if errors(spec.problems):
            raise SpecError(spec.problems)

    spec.pending = conclude
    if not background:
        spec.settle()
    return spec


@dataclass(frozen=True)
class Stage:
    """One generator: the inputs it reads (fingerprint names, see cache.py) and how it runs."""

    name: str
    inputs: tuple[str, ...]
    run: Callable[[Spec, Path], Outputs]


def _docs(spec: Spec, templates: Path) -> Outputs:
    titles = {f.doc.path.stem: f.title for f in spec.fragments}
    pages = generate_docs(spec.model, templates, spec.bundle.sources, spec.bundle.root_file, titles)
    return pages | generate_client_reference(spec.model, templates)


STAGES = (
    Stage("bundle", ("spec", "tool"), lambda spec, _: {"openapi.json": bundled_json(spec.document)}),
    Stage(
        "package",
        ("spec", "tool", "templates/package", "templates/runtime"),
        lambda spec, t: generate_package(spec.document, t),
    ),
    Stage(
        "models",
        ("spec", "tool", "templates/models"),
        lambda spec, t: {f"{PACKAGE}/models.py": generate_models(spec.model, spec.bundle.sources, t).encode()},
    ),
    Stage(
        "registry",
        ("spec", "tool", "templates/registry"),
        lambda spec, t: generate_registry(spec.model, t),
    ),
    Stage(
        "server",
        ("spec", "tool", "templates/server", "templates/runtime"),
        lambda spec, t: generate_server(spec.model, t),
    ),
    Stage("client", ("spec", "tool", "templates/client"), lambda spec, t: generate_client(spec.model, t)),
    Stage("docs", ("spec", "tool", "templates/docs"), _docs),
    Stage("releases", ("spec", "tool"), lambda spec, _: release_outputs(spec.releases)),
)


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
    keys = {stage.name: stage_key(inputs, stage.inputs) if inputs is not None else "" for stage in STAGES}
    reusable = {
        stage.name: previous.reusable(stage.name, keys[stage.name], out)
        if previous and out and inputs is not None
        else None
        for stage in STAGES
    }
    in_child = _models_in_child(spec, templates) if spec.pending is not None and reusable["models"] is None else None
    try:
        spec.settle()  # validation, here, while the models are generated in the child
        # The other stages run here meanwhile; the models are collected last.
        for stage in sorted(STAGES, key=lambda stage: in_child is not None and stage.name == "models"):
            key, reused = keys[stage.name], reusable[stage.name]
            if reused is None:
                started = time.perf_counter()
                if progress:
                    progress(f"{stage.name} ...")
                child = in_child is not None and stage.name == "models"
                produced = in_child.result() if child else stage.run(spec, templates)
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
    finally:
        if in_child is not None:
            in_child.terminate()
    order = [stage.name for stage in STAGES]
    records = {name: records[name] for name in order if name in records}
    ran.sort(key=order.index)
    return dict(sorted(outputs.items())), records, ran


class _ChildStage:
    """The models stage in a child process, so that it runs while this process validates the spec.

    A fresh interpreter (not a fork, whose copy of this process's memory would count twice)
    bundles the spec again, cheaply, runs datamodel-code-generator, the slowest generator, and
    sends the outputs back pickled on its stdout. An invalid spec terminates it.
    """

    def __init__(self, path: Path, templates: Path):
        tools = str(Path(__file__).resolve().parents[1])  # where this `orspec` package is imported from
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tools, os.environ.get("PYTHONPATH")]))}
        code = "from orspec.pipeline import _models_child; _models_child()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, os.fspath(path), os.fspath(templates)],
            stdout=subprocess.PIPE,
            env=env,
        )

    def result(self) -> Outputs:
        try:
            sent, _ = self.proc.communicate()
        finally:
            self.terminate()
        if self.proc.returncode != 0:
            raise RuntimeError(f"the models stage's child process failed (exit status {self.proc.returncode})")
        kind, value = pickle.loads(sent)
        if kind is not None:  # a SpecError, sent back as its class and problems (it does not pickle)
            raise kind(value)
        return value

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _models_in_child(spec: Spec, templates: Path) -> _ChildStage | None:
    if spec.path is None or os.environ.get("ORSPEC_BUILD_JOBS") == "1":  # 1: every generator in this process
        return None
    return _ChildStage(spec.path, templates)


def _models_child() -> None:
    """The child's side of `_ChildStage`: spec and templates paths in argv, the pickled result on stdout."""
    result, sys.stdout = sys.stdout.buffer, sys.stderr  # nothing printed may corrupt the result
    result.write(pickle.dumps(_generate_models_at(Path(sys.argv[1]), Path(sys.argv[2]))))
    result.flush()


def _generate_models_at(
    path: Path, templates: Path = TEMPLATES
) -> tuple[type[SpecError] | None, Outputs | list[Problem]]:
    stage = next(stage for stage in STAGES if stage.name == "models")
    try:
        spec = load_spec(path, known_problems=[])  # loaded as the parent did; validation is the parent's
        return None, stage.run(spec, templates)
    except SpecError as exc:
        return type(exc), exc.problems
