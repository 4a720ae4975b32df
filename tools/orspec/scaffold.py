"""`orspec scaffold provider NAME --out DIR`: a standalone provider project that passes compliance as generated.

The project is rendered from `templates/scaffold/` (see its README): `common/` for every project,
then the chosen template (`demo` or `chat-completions`), then `vendor/` with `--vendor`. Names are
sanitised once, here: the distribution name (`acme-llm`), the import package (`acme_llm`), the
provider class (`AcmeLlmProvider`) and the vendor slug and prefix (`acme`, `Acme`).

The project depends on `openresponses-runtime[server]` by a compatible version range (the installed
runtime's, or that of `--runtime PATH`, a local generated runtime the project installs editable),
and on `orspec` only in its test extra, for the compliance suite. No file it writes holds a path of
this machine: `--runtime` is written relative to the project.

It never deletes anything: a directory that exists and is not empty is refused unless `--force`
is given, and then only the project's own files are written (or overwritten).
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import shlex
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from . import __version__
from .project import TEMPLATES as _SHIPPED

__all__ = [
    "SCAFFOLD",
    "TEMPLATES",
    "ScaffoldError",
    "Names",
    "Runtime",
    "find_runtime",
    "names_for",
    "render",
    "scaffold",
]

SCAFFOLD = _SHIPPED / "scaffold"
RUNTIME = "openresponses-runtime"
TEMPLATES = ("demo", "chat-completions")
_VENDOR = re.compile(r"^[a-z][a-z0-9_-]*$")
_DESCRIPTIONS = {
    "demo": "An Open Responses provider.",
    "chat-completions": "An Open Responses gateway in front of an OpenAI-compatible Chat Completions API.",
}


class ScaffoldError(Exception):
    """The arguments cannot make a project (a bad name, a non-empty directory without --force)."""


@dataclass(frozen=True)
class Names:
    name: str  # as given, for prose
    dist: str  # the distribution and console-script name: lowercase, dashes
    package: str  # the import package
    class_name: str  # the provider class
    vendor: str | None = None
    vendor_pascal: str | None = None


def names_for(name: str, vendor: str | None = None) -> Names:
    """The sanitised names for project `name` (and `vendor`); `ScaffoldError` when nothing usable is left."""
    dist = re.sub(r"[^a-z0-9]+", "-", name.strip().lower()).strip("-")
    if not dist:
        raise ScaffoldError(f"{name!r} has no letters or digits to make a project name from")
    package = dist.replace("-", "_")
    if package[0].isdigit() or keyword.iskeyword(package) or package in sys.stdlib_module_names:
        package = f"{package}_provider"
    words = [w for w in dist.split("-") if w]
    class_name = "".join(w[:1].upper() + w[1:] for w in words)
    if class_name[0].isdigit():
        class_name = "P" + class_name
    if not class_name.endswith("Provider"):
        class_name += "Provider"
    slug = prefix = None
    if vendor is not None:
        slug = re.sub(r"[^a-z0-9_-]+", "-", vendor.strip().lower()).strip("-_")
        if not _VENDOR.match(slug):
            raise ScaffoldError(
                f"vendor {vendor!r} does not give a slug matching ^[a-z][a-z0-9_-]*$ (try letters first)"
            )
        from .extensions import pascal  # imported here: it pulls in the validator

        prefix = pascal(slug)
    return Names(name.strip(), dist, package, class_name, slug, prefix)


@dataclass(frozen=True)
class Runtime:
    """The runtime a project depends on: its version, and where a local one lives (relative to the project)."""

    version: str
    path: str | None = None  # POSIX, relative to the project; None: from the package index

    @property
    def requirement(self) -> str:
        """`openresponses-runtime[server]` compatible with `version`: same spec release and generator major."""
        parts = self.version.split("+")[0].split(".")
        spec = f"~={'.'.join(parts[:-1])}" if len(parts) > 2 else f">={self.version}"
        return f"{RUNTIME}[server]{spec}"

    @property
    def install(self) -> str:
        """The pip arguments that install it before the project (empty: the project's dependency does)."""
        return f"-e {shlex.quote(self.path)} " if self.path else ""


def find_runtime(local: Path | None = None, out: Path | None = None) -> Runtime:
    """The installed runtime, or the generated one at `local` (a folder with its pyproject.toml)."""
    if local is None:
        try:
            return Runtime(metadata.version(RUNTIME))
        except metadata.PackageNotFoundError:
            pass
        try:  # importable without its distribution's metadata (say, on PYTHONPATH)
            from openresponses_runtime import __version__ as version
        except ImportError:
            raise ScaffoldError(f"{RUNTIME} is not installed; install it, or pass --runtime PATH") from None
        return Runtime(version)
    try:
        project = tomllib.loads((local / "pyproject.toml").read_text()).get("project") or {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScaffoldError(f"--runtime {local}: no readable pyproject.toml ({exc})") from None
    if project.get("name") != RUNTIME or not isinstance(project.get("version"), str):
        raise ScaffoldError(f"--runtime {local}: not a generated {RUNTIME} (e.g. generated/python of a build)")
    # Relative to the project, as the user spelt the paths (symlinks kept), so no file holds a path
    # of this machine; a runtime that shares no folder with the project but / would leak one.
    local_abs, out_abs = os.path.abspath(local), os.path.abspath(out or Path.cwd())
    if os.path.commonpath([local_abs, out_abs]) == os.path.abspath(os.sep):
        raise ScaffoldError(
            f"--runtime {local}: the project and the runtime share no folder but /; put the project beside "
            "the runtime (the path is written relative to the project)"
        )
    return Runtime(project["version"], Path(os.path.relpath(local_abs, out_abs)).as_posix())


def render(names: Names, template: str = "demo", *, runtime: Runtime | None = None) -> dict[str, tuple[bytes, int]]:
    """Every file of the project: relative path -> (content, mode)."""
    if template not in TEMPLATES:
        raise ScaffoldError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")
    import jinja2

    runtime = runtime or find_runtime()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(SCAFFOLD)),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    context = {
        "name": names.name,
        "dist": names.dist,
        "package": names.package,
        "class_name": names.class_name,
        "vendor": names.vendor,
        "vendor_pascal": names.vendor_pascal,
        "template": template,
        "description": _DESCRIPTIONS[template],
        "runtime_requirement": runtime.requirement,
        "runtime_install": runtime.install,
        "runtime_path": runtime.path,
        "orspec_requirement": f"orspec~={'.'.join(__version__.split('.')[:2])}.0",
    }
    folders = ["common", template] + (["vendor"] if names.vendor else [])
    files: dict[str, tuple[bytes, int]] = {}
    for folder in folders:
        base = SCAFFOLD / folder
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            relative = path.relative_to(base).as_posix()
            if "__pycache__" in relative:
                continue
            target = relative.replace("__package__", names.package).replace("__vendor__", names.vendor or "")
            if target.endswith(".jinja"):
                target = target[: -len(".jinja")]
                text = env.get_template(f"{folder}/{relative}").render(context)
                if target.endswith(".py") and text.strip():
                    text = _ruff_format(text, target)
                content = text.encode()
            else:
                content = path.read_bytes()
            mode = 0o755 if target.startswith(".ci/") else 0o644
            files[target] = (content, mode)
    return files


def scaffold(
    name: str,
    out: Path,
    *,
    template: str = "demo",
    vendor: str | None = None,
    force: bool = False,
    runtime_path: Path | None = None,
) -> list[str]:
    """Write the project into `out`; the relative paths written. Refuses a non-empty `out` without `force`.

    `runtime_path`: a local generated runtime to install editable instead of the index's.
    """
    names = names_for(name, vendor)
    files = render(names, template, runtime=find_runtime(runtime_path, out))
    if out.exists() and not out.is_dir():
        raise ScaffoldError(f"{out} exists and is not a directory; nothing was changed")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ScaffoldError(
            f"{out} is not empty; nothing was changed. Pass --force to write the project's files into it "
            "(files of the same name are overwritten, nothing is deleted)."
        )
    for relative in files:
        target = out / relative
        if target.is_dir():
            raise ScaffoldError(f"{target} is a directory where the project needs a file")
    for relative, (content, mode) in files.items():
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(mode)
    return sorted(files)


def _ruff_format(code: str, filename: str) -> str:
    from .generate.pyformat import ruff_format

    try:
        return ruff_format(code, filename=filename)
    except ValueError as exc:
        raise ScaffoldError(f"ruff could not format {filename}: {exc}") from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scaffold", help="create a new provider project")
    p.add_argument("kind", choices=("provider",), help="what to create (provider)")
    p.add_argument("name", help="the project name, e.g. acme-llm")
    p.add_argument("--out", type=Path, required=True, help="the directory to create (must be empty unless --force)")
    p.add_argument("--vendor", help="also write a starter extension fragment for this vendor slug")
    p.add_argument("--template", choices=TEMPLATES, default="demo", help="demo (default) or chat-completions")
    p.add_argument("--force", action="store_true", help="write into a non-empty directory (overwrites, never deletes)")
    p.add_argument(
        "--runtime",
        type=Path,
        metavar="PATH",
        help="a local generated runtime (e.g. generated/python) for the project to install editable while developing",
    )
    p.set_defaults(run=cmd_scaffold)


def cmd_scaffold(args: argparse.Namespace) -> int:
    try:
        written = scaffold(
            args.name, args.out, template=args.template, vendor=args.vendor, force=args.force, runtime_path=args.runtime
        )
    except ScaffoldError as exc:
        print(f"orspec: {exc}", file=sys.stderr)
        return 1
    names = names_for(args.name, args.vendor)
    print(f"created {names.dist} ({args.template}) in {args.out}: {len(written)} files")
    print(f"  implement {names.class_name} in src/{names.package}/provider.py; then, in {args.out}:")
    print("  see README.md for the two commands (run the server; run the tests)")
    return 0
