"""The build: load and validate the spec once, run every generator, hand the union to the writer."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .bundle import Bundle, bundle, bundled_json
from .cache import Stamp, digest, stage_key
from .extensions import Fragment, extend
from .generate.bindings import Bindings, bind, generate_bindings
from .generate.client import generate_client, generate_client_reference
from .generate.docs import OUT as DOCS_OUT
from .generate.docs import environment, generate_docs
from .generate.models import generate_models
from .generate.package import PACKAGE, generate_package
from .generate.registry import generate_registry
from .generate.rules import generate_rules_page
from .generate.server import check_operations, generate_server
from .generate.typescript import ROOT as TS_ROOT
from .generate.typescript import generate_typescript
from .generate.typescript_checker import generate_typescript_checker
from .generate.typescript_routes import generate_typescript_routes
from .generate.versions import DRAFT, release_docs, spec_history, versions_map
from .mappings import add_mappings
from .native import NativeNames, check_native_names
from .problems import Level, Problem, SpecError, errors
from .project import RUNTIME, TEMPLATES, TS_RUNTIME
from .publish import published
from .releases import Release, load_releases, release_outputs
from .schema import SpecModel, build
from .statemachines import StateMachines, check_state_machines
from .validate import validate
from .write import DISTRIBUTIONS, MARK, Outputs, hand_written, is_generated


@dataclass
class Spec:
    """One validated, bundled document and what validation found."""

    bundle: Bundle
    problems: list[Problem] = field(default_factory=list)
    state_machines: StateMachines | None = None
    native: NativeNames = field(default_factory=NativeNames)  # OpenAI's names the spec does not define
    fragments: list[Fragment] = field(default_factory=list)
    releases: list[Release] = field(default_factory=list)
    model: SpecModel | None = None  # the typed view every stage reads; set by `load_spec`
    bindings: Bindings | None = None  # the classes the runtime uses, by their place on the wire

    @property
    def document(self) -> dict:
        return self.bundle.document


def load_spec(path: Path, *, lenient: bool = False, known_problems: list[Problem] | None = None) -> Spec:
    """Bundle and validate. Raises SpecError unless the spec is valid (or `lenient`).

    `known_problems` are the findings of an earlier run on byte-identical inputs; passing them
    skips validation, the slowest part of loading.
    """
    spec = Spec(bundle(path))
    spec.fragments, fragment_problems = extend(spec.bundle)
    add_mappings(spec.document)  # after the fragments, so vendor variants are mapped too
    spec.state_machines, machine_problems = check_state_machines(spec.bundle)
    spec.releases, release_problems = load_releases(spec.bundle.root)
    spec.native, native_problems = check_native_names(spec.bundle)
    spec.model = build(spec.document, spec.state_machines, spec.releases)
    spec.bindings = bind(spec.model, spec.bundle.sources)
    if known_problems is not None:
        spec.problems = list(known_problems)
        return spec
    spec.problems = fragment_problems + validate(spec.bundle) + machine_problems + release_problems
    spec.problems += native_problems
    spec.problems += check_operations(spec.model, spec.bundle.sources)
    spec.problems += spec.bindings.problems  # warnings: what the runtime will do without
    if lenient:
        spec.problems = [Problem(p.file, p.line, p.pointer, p.message, Level.WARNING) for p in spec.problems]
    if errors(spec.problems):
        raise SpecError(spec.problems)
    return spec


@dataclass(frozen=True)
class Stage:
    """One generator: the inputs it reads (fingerprint names, see cache.py), how it runs, and what
    its modules are made from (for their generated header)."""

    name: str
    inputs: tuple[str, ...]
    run: Callable[[Spec, Path], Outputs]
    made_from: str | None = "the spec"  # None: its files are copies of source, with no header


def _docs(spec: Spec, templates: Path) -> Outputs:
    titles = {f.doc.path.stem: f.title for f in spec.fragments}
    # The releases freeze the core alone, so the draft's history compares its core, unmerged.
    history = spec_history(spec.releases, bundle(spec.bundle.root).document) if spec.releases else None
    pages = generate_docs(
        spec.model, templates, spec.bundle.sources, spec.bundle.root_file, titles, history=history, version=DRAFT
    )
    pages |= generate_client_reference(spec.model, templates)
    pages |= generate_rules_page(spec.document, spec.state_machines, environment(templates))
    releases = release_docs(spec.releases, spec.state_machines, templates, history, spec.document)
    versions = versions_map(pages, releases, [r.date for r in spec.releases])
    return pages | releases | {f"{DOCS_OUT}/versions.json": versions}


STAGES = (
    Stage("bundle", ("spec", "tool"), lambda spec, _: {"openapi.json": bundled_json(published(spec.document))}),
    Stage(
        "package",
        ("spec", "tool", "templates/package"),
        lambda spec, t: generate_package(spec.document, t),
        "the spec's info and templates/package/",
    ),
    Stage(
        "models",
        ("spec", "tool", "templates/models"),
        lambda spec, t: {f"{PACKAGE}/models.py": generate_models(spec.model, spec.bundle.sources, t).encode()},
        "the spec's schemas and templates/models/",
    ),
    Stage(
        "registry",
        ("spec", "tool", "templates/registry"),
        lambda spec, t: generate_registry(spec.model, t),
        "the spec's events, its state machines and templates/registry/",
    ),
    Stage(
        "server",
        ("spec", "tool", "templates/server", "runtime"),
        lambda spec, t: generate_server(spec.model, t, spec.native),
        "the spec's operations, request and response schemas, spec/openai-native.yaml and templates/server/",
    ),
    Stage(
        "bindings",
        ("spec", "tool"),
        lambda spec, _: generate_bindings(spec.model, spec.bindings),
        "the spec's create operation, its answer, its streaming events and tools/orspec/generate/bindings.py",
    ),
    Stage(
        "client",
        ("spec", "tool", "templates/client"),
        lambda spec, t: generate_client(spec.model, t),
        "the spec's operations and templates/client/",
    ),
    Stage(
        "typescript",
        ("spec", "tool"),
        lambda spec, _: generate_typescript(spec.model),
        "the spec's schemas, events and operations",
    ),
    Stage(
        "typescript-routes",
        ("spec", "tool", "runtime"),
        lambda spec, _: generate_typescript_routes(spec.model),
        "the spec's operations and the runtime's handlers",
    ),
    Stage(
        "typescript-checker",
        ("spec", "tool"),
        lambda spec, _: generate_typescript_checker(spec.model),
        "spec/state-machines.yaml and the spec's streaming events",
    ),
    Stage("docs", ("spec", "tool", "templates/docs"), _docs),
    Stage("releases", ("spec", "tool"), lambda spec, _: release_outputs(spec.releases)),
)
# Copy each distribution's hand-written modules into an output folder other than their own.
RUNTIME_STAGE = Stage("runtime", ("runtime",), lambda spec, _: runtime_source(), made_from=None)
TS_RUNTIME_STAGE = Stage(
    "runtime-typescript", ("runtime-typescript",), lambda spec, _: typescript_source(), made_from=None
)


def hand_written_source(folder: Path, prefix: str) -> Outputs:
    """The hand-written files of a distribution's `folder`, as outputs under `prefix`; the modules an
    earlier build generated there are made anew, and installed packages are not ours."""
    found = {f"{prefix}/{p.relative_to(folder).as_posix()}": p for p in sorted(folder.rglob("*")) if p.is_file()}
    return {
        rel: path.read_bytes()
        for rel, path in found.items()
        if not {"__pycache__", "node_modules"} & set(path.relative_to(folder).parts) and hand_written(rel, path)
    }


def runtime_source(runtime: Path = RUNTIME) -> Outputs:
    """The Python runtime's hand-written modules, as outputs of its package folder."""
    return hand_written_source(runtime, PACKAGE)


def typescript_source(runtime: Path = TS_RUNTIME) -> Outputs:
    """The npm package's hand-written modules, as outputs of its folder."""
    return hand_written_source(runtime, TS_ROOT)


def _copies(out: Path | None) -> tuple[Stage, ...]:
    """The stages that copy hand-written modules into an output folder other than their own."""
    sources = ((RUNTIME_STAGE, PACKAGE, RUNTIME), (TS_RUNTIME_STAGE, TS_ROOT, TS_RUNTIME))
    return tuple(stage for stage, rel, home in sources if out is None or (out / rel).resolve() != home.resolve())


_COMMENTS = {".py": "# {}", ".toml": "# {}", ".md": "<!-- {} -->", ".js": "// {}", ".ts": "// {}"}


def with_header(path: str, data: bytes, made_from: str | None) -> bytes:
    """A module of a distribution, beginning with the line that says it is generated, from what
    and by which command; the build touches no file there without it."""
    comment = _COMMENTS.get(Path(path).suffix)
    if made_from is None or not path.startswith(DISTRIBUTIONS) or comment is None or is_generated(data):
        return data
    line = f"{MARK.decode()} from {made_from}; do not edit by hand: change those and run it again."
    return comment.format(line).encode() + b"\n" + data


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
    stages = (*STAGES, *_copies(out))
    for stage in stages:
        key = stage_key(inputs, stage.inputs) if inputs is not None else ""
        reused = previous.reusable(stage.name, key, out) if previous and out and inputs is not None else None
        if reused is None:
            started = time.perf_counter()
            if progress:
                progress(f"{stage.name} ...")
            produced = {
                path: with_header(path, data, stage.made_from) for path, data in stage.run(spec, templates).items()
            }
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
