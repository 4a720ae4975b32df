"""The `orspec` command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__
from .problems import Problem, SpecError
from .usage import UsageError, project_path


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()  # here, not at exit, so a closed pipe is caught below
        return code
    except BrokenPipeError:
        # The reader went away (`orspec ... | head`): stop quietly, as a process killed by SIGPIPE
        # would, and keep the exit-time flush of what is still buffered from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except SpecError as exc:
        _print_problems(exc.problems)
        return 1
    except BuildCheckFailed:
        return 1
    except UsageError as exc:
        print(f"orspec: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug in orspec itself: say so plainly, trace only on request
        if os.environ.get("ORSPEC_DEBUG"):
            raise
        print(
            f"orspec: internal error: {type(exc).__name__}: {exc} (set ORSPEC_DEBUG=1 for a traceback)", file=sys.stderr
        )
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orspec", description="Schema-first toolchain for Open Responses.")
    parser.add_argument("--version", action="version", version=f"orspec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check the spec and print every problem")
    p.add_argument("--spec", type=Path, help="spec directory or OpenAPI file (default: the project's spec/)")
    p.set_defaults(run=cmd_validate)

    p = sub.add_parser("build", help="validate, then generate everything into generated/")
    p.add_argument("--spec", type=Path, help="spec directory or OpenAPI file (default: the project's spec/)")
    p.add_argument("--out", type=Path, help="output directory (default: the project's generated/)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 and list files that are stale")
    p.add_argument("--lenient", action="store_true", help="report spec errors as warnings and build anyway")
    p.add_argument(
        "--templates",
        type=Path,
        metavar="DIR",
        help="your templates, laid over the shipped ones file by file (same layout: registry/, server/, ...)",
    )
    p.add_argument(
        "--self-check",
        action="store_true",
        help="before writing, import every Python module of the output in a fresh interpreter and type-check the npm"
        " package with `tsc --strict` (where Node and .cache/typescript are found); CI sets it",
    )
    p.set_defaults(run=cmd_build)

    p = sub.add_parser("extensions", help="vendor extension fragments")
    p.add_argument("action", choices=("list",), help="list: each vendor and what it adds")
    p.add_argument("--spec", type=Path, help="spec directory (default: the project's spec/)")
    p.set_defaults(run=cmd_extensions)

    p = sub.add_parser(
        "release", help="freeze the core spec as a dated release, draft its changelog, and set info.version to the date"
    )
    p.add_argument("date", help="the release date, YYYY-MM-DD")
    p.add_argument("--spec", type=Path, help="spec directory (default: the project's spec/)")
    p.set_defaults(run=cmd_release)

    p = sub.add_parser("diff", help="structural differences between two specs")
    spec_or_date = "a spec directory, an OpenAPI file, or the date of one of the project's releases (YYYY-MM-DD)"
    p.add_argument("old", metavar="OLD", help=f"the earlier spec: {spec_or_date}")
    p.add_argument("new", metavar="NEW", help=f"the later spec: {spec_or_date}")
    p.add_argument("--format", choices=("text", "md", "json"), default="text", help="output format (default: text)")
    p.add_argument("--docs", action="store_true", help="also report description changes")
    p.add_argument(
        "--extensions",
        action="store_true",
        help="merge each spec directory's vendor fragments first, so the operations and schemas they add are compared",
    )
    p.add_argument(
        "--fail-on",
        choices=tuple(FAIL_ON),
        help="exit 1 when a change is breaking (for anyone), breaking for clients, or breaking for servers",
    )
    p.set_defaults(run=cmd_diff)

    p = sub.add_parser("check-stream", help="check an SSE capture against the schemas and state machines")
    p.add_argument("file", metavar="FILE", help="the SSE capture, or - for standard input")
    p.add_argument(
        "--allow-missing-done",
        action="store_true",
        help="report a missing `data: [DONE]` but do not fail on it (OpenAI never sends it)",
    )
    p.set_defaults(run=cmd_check_stream)

    from .docs_site import add_parser as add_docs_parser  # `orspec docs build|serve`

    add_docs_parser(sub)

    from .serve import add_parser as add_serve_parser  # `orspec serve`

    add_serve_parser(sub)

    from .compliance.cli import add_parser as add_compliance_parser  # `orspec compliance`

    add_compliance_parser(sub)

    from .scaffold import add_parser as add_scaffold_parser  # `orspec scaffold provider`

    add_scaffold_parser(sub)

    from .proxy.cli import add_parser as add_proxy_parser  # `orspec proxy`

    add_proxy_parser(sub)

    p = sub.add_parser("report", help="an HTML (or Markdown) report of what `orspec proxy --record` recorded")
    p.add_argument("dir", metavar="DIR", type=Path, help="the directory `orspec proxy --record DIR` wrote")
    p.add_argument("--format", choices=("html", "md"), default="html", help="html (default) or md (Markdown)")
    p.add_argument(
        "--out", metavar="FILE", help="where to write it (default: DIR/report.html or DIR/report.md; - for stdout)"
    )
    p.set_defaults(run=cmd_report)
    return parser


def _print_problems(problems: list[Problem]) -> None:
    for problem in problems:
        print(problem, file=sys.stderr)


def _spec_path(args: argparse.Namespace) -> Path:
    if args.spec:
        return _existing_spec(args.spec, "pass a spec directory or an OpenAPI file to --spec")
    return project_path(None, "spec", "--spec")


def _existing_spec(path: Path, fix: str) -> Path:
    """`path` if a spec can be looked for there; else a usage error, before any file:line problem
    names a location that is not one."""
    from .bundle import ROOT_NAMES

    if not path.exists():
        reason = "no such file or directory"
    elif path.is_dir() and not any((path / name).is_file() for name in ROOT_NAMES):
        reason = f"the directory holds no {', '.join(ROOT_NAMES[:-1])} or {ROOT_NAMES[-1]}"
    else:
        return path
    raise UsageError(f"no spec at {path}: {reason}; {fix}")


def _out_path(args: argparse.Namespace) -> Path:
    return project_path(args.out, "generated", "--out")


def cmd_validate(args: argparse.Namespace) -> int:
    from .pipeline import load_spec

    spec = load_spec(_spec_path(args))
    _print_problems(spec.problems)
    _print_stubs(spec.model)
    schemas = len((spec.document.get("components") or {}).get("schemas") or {})
    paths = len(spec.document.get("paths") or {})
    vendor = sum(len(f.schemas) for f in spec.fragments)
    from_fragments = f" ({vendor} from {len(spec.fragments)} vendor fragments)" if spec.fragments else ""
    added = sum(1 for op in spec.model.operations if op.vendor)
    operations = f" ({len(spec.model.operations)} operations{f', {added} from vendor fragments' if added else ''})"
    print(f"OK: {schemas} schemas{from_fragments}, {paths} paths{operations}, {len(spec.problems)} warnings")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from .project import TemplatesError, layered_templates

    try:
        with layered_templates(args.templates) as templates:
            return _build(args, templates)
    except TemplatesError as exc:
        raise UsageError(str(exc)) from None


def _build(args: argparse.Namespace, templates: Path) -> int:
    from .cache import Stamp, fingerprint
    from .problems import Level

    spec_path, out = _spec_path(args), _out_path(args)
    previous = Stamp.read(out)
    inputs = fingerprint(spec_path, templates, lenient=args.lenient, loaded=tuple(previous.loaded) if previous else ())
    known = (
        [Problem(f, line, ptr, msg, Level(level)) for f, line, ptr, msg, level in previous.problems] if previous else []
    )
    if previous and previous.inputs == inputs and previous.matches_disk(out) and not args.self_check:
        # Same inputs, same toolchain, outputs untouched: a build would write the same bytes.
        _print_problems(known)
        print(f"up to date: {len(previous.files())} files in {out} (no input changed since the last build)")
        return 0

    from .pipeline import load_spec, run_stages
    from .write import NotOurs, stale_files, write_tree

    same_spec = previous is not None and all(previous.inputs.get(k) == inputs.get(k) for k in ("spec", "tool", "flags"))
    spec = load_spec(spec_path, lenient=args.lenient, known_problems=known if same_spec else None)
    _print_problems(spec.problems)
    _print_stubs(spec.model)
    outputs, records, ran = run_stages(
        spec, templates, inputs=inputs, previous=previous, out=out, progress=_progress_printer()
    )
    if args.self_check:
        _check_outputs(outputs)
    if args.check:
        stale = stale_files(out, outputs)
        for path in stale:
            print(f"stale: {path}", file=sys.stderr)
        if stale:
            print(f"{len(stale)} generated files are stale; run `orspec build`", file=sys.stderr)
            return 1
        print(f"up to date: {len(outputs)} files in {out}")
        return 0
    try:
        changed = write_tree(out, outputs, frozenset(previous.files()) if previous else frozenset())
    except NotOurs as exc:
        raise UsageError(f"{exc}; pass a new or empty folder to --out, or move that file away") from None
    problems = [[p.file, p.line, p.pointer, p.message, p.level.value] for p in spec.problems]
    loaded = sorted(str(path) for path in spec.bundle.files)
    Stamp(inputs, records, problems, loaded).write(out)
    print(f"built {len(outputs)} files into {out} ({len(changed)} changed; ran {', '.join(ran) or 'no stage'})")
    return 0


def _check_outputs(outputs: dict[str, bytes]) -> None:
    """Import every Python module of the output in a fresh interpreter and run `tsc --strict` on
    the npm package; a failure is a build error, before anything is written."""
    from .pipeline import runtime_source, typescript_source
    from .project import find_root
    from .selfcheck import CheckFailed, check_outputs, typescript_tools

    tools = typescript_tools(find_root() or find_root(Path(__file__).parent))
    if tools is None:
        print(
            "orspec: --self-check: no Node or no TypeScript tools (.cache/typescript): not type-checked",
            file=sys.stderr,
        )
    try:
        check_outputs(outputs, runtime_source() | typescript_source(), tools)
    except CheckFailed as exc:
        for failure in exc.failures:
            print(f"orspec: the build output does not load: {failure}", file=sys.stderr)
        raise BuildCheckFailed from None


class BuildCheckFailed(Exception):
    """The output failed its check; each failure is already printed."""


def _print_stubs(model) -> None:
    """One line per operation the runtime leaves to the provider: it answers 501 until implemented."""
    from .generate.server import stubs

    for route in stubs(model):
        print(
            f"stub: {route.method} {route.path} ({route.operation_id}) answers 501 until the provider "
            f"defines {route.implement}()"
        )


def _progress_printer():
    """Stage-by-stage progress on an interactive terminal; silence when piped or in CI."""
    if not sys.stderr.isatty():
        return None

    def show(message: str) -> None:
        end = "\r" if message.endswith("...") else "\n"
        print(f"\033[2K  {message}", end=end, file=sys.stderr, flush=True)

    return show


def cmd_extensions(args: argparse.Namespace) -> int:
    from .extensions import describe
    from .pipeline import load_spec

    spec = load_spec(_spec_path(args))
    print(describe(spec.fragments) if spec.fragments else "no vendor fragments")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from .bundle import bundle
    from .pipeline import load_spec
    from .releases import date_problem, make_release, set_info_version

    if wrong := date_problem(args.date):
        raise UsageError(f"{wrong}; pass the day of the release, e.g. 2026-05-01")
    spec_path = _spec_path(args)
    if not spec_path.is_dir():
        raise UsageError("releases belong to a spec directory; pass --spec DIR")
    last = load_spec(spec_path).releases[-1:]  # only a valid spec is released
    if last and args.date <= last[0].date:
        raise UsageError(f"release {args.date} must be later than the last one, {last[0].date}; pass a later date")
    release = make_release(spec_path, bundle(spec_path).document, args.date)
    set_info_version(spec_path / "openapi.yaml", args.date)
    print(
        f"released {args.date} into {release.folder}; review {release.folder / 'CHANGELOG.md'}, then run `orspec build`"
    )
    return 0


# `diff --fail-on`: which changes fail the command.
FAIL_ON = {
    "breaking": lambda change: change.breaking,
    "breaking-clients": lambda change: change.breaking_for_clients,
    "breaking-servers": lambda change: change.breaking_for_servers,
}


def cmd_diff(args: argparse.Namespace) -> int:
    from .diff import diff_specs, render

    old, new = _spec_or_release(args.old), _spec_or_release(args.new)
    changes = diff_specs(old, new, docs=args.docs, extensions=args.extensions)
    text = render(changes, args.format)
    if text:
        print(text)
    if args.fail_on:
        failing = [c for c in changes if FAIL_ON[args.fail_on](c)]
        if failing:
            print(f"orspec: {len(failing)} changes are {args.fail_on.replace('-', ' for ')}", file=sys.stderr)
            return 1
    return 0


def _spec_or_release(given: str) -> Path:
    """A path as given, or for a date, that release of the project (`spec/releases/DATE/openapi.json`)."""
    from .releases import DATE, releases_dir

    if not DATE.match(given) or Path(given).exists():
        return _existing_spec(Path(given), "pass a spec directory, an OpenAPI file or the date of a release")
    folder = releases_dir(project_path(None, "spec", "a spec path instead of a date"))
    frozen = folder / given / "openapi.json"
    if not frozen.is_file():
        dates = sorted(p.parent.name for p in folder.glob("*/openapi.json"))
        raise UsageError(f"no release {given} in {folder} (releases: {', '.join(dates) or 'none'})")
    return frozen


def cmd_check_stream(args: argparse.Namespace) -> int:
    from openresponses_runtime.streaming import StreamChecker

    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {args.file}: {exc.strerror}") from None
    checker = StreamChecker()
    violations = checker.check_sse(data)
    for violation in violations:
        print(violation)
    failing = checker.without_missing_done(checker.errors) if args.allow_missing_done else checker.errors
    if failing:
        print(f"{len(failing)} violations in {checker.events} events", file=sys.stderr)
        return 1
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(checker.counts.items()))
    noted = f"; {len(violations)} findings tolerated above" if violations else ""
    print(f"OK: {checker.events} events ({counts}){noted}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import ReportError, load_records, render

    try:
        records = load_records(args.dir)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    text = render(records, args.format)
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.out) if args.out else args.dir / f"report.{args.format}"
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}; pass another file to --out (- for stdout)") from None
    print(f"wrote {out} ({len(records)} exchanges)")
    return 0
