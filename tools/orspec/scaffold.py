"""`orspec scaffold provider NAME --out DIR`: a standalone provider project that passes compliance as generated.

The project is rendered from `templates/scaffold/` (see its README): `common/` for every project,
then the chosen template (`demo`, or a gateway's folder, named as in the runtime's gateway registry), then `vendor/` with `--vendor`. Names are
sanitised once, here: the distribution name (`acme-llm`), the import package (`acme_llm`), the
provider class (`AcmeLlmProvider`) and the vendor slug and prefix (`acme`, `Acme`).

The project depends on `openresponses-runtime[server]` by a compatible version range, and on
`orspec` only in its test extra, for the compliance suite. Its README and `.ci/run` install both
from where they come from (`find_sources`): an orspec checkout (`--orspec CHECKOUT`, or a
`--runtime` that is a checkout's generated/python), a folder of their wheels (`--orspec WHEELS`),
or the package index. No file it writes holds a path of this machine: paths are written relative
to the project.

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
    "Toolchain",
    "find_runtime",
    "find_sources",
    "install_args",
    "names_for",
    "render",
    "scaffold",
]

SCAFFOLD = _SHIPPED / "scaffold"
RUNTIME = "openresponses-runtime"
BUILD_WHEELS = "pip wheel --no-deps -w DIR ORSPEC ORSPEC/generated/python"
# `demo`, then a folder per gateway of the runtime's registry (`openresponses_runtime.gateways.registry`),
# which says what the project's README and tests say of it.
TEMPLATES = (
    "demo",
    *sorted(
        p.name for p in SCAFFOLD.iterdir() if p.is_dir() and p.name not in ("common", "demo", "vendor", "typescript")
    ),
)
LANGS = ("python", "typescript")
_VENDOR = re.compile(r"^[a-z][a-z0-9_-]*$")


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


@dataclass(frozen=True)
class Toolchain:
    """The orspec a project's tests install for the compliance suite: its version, and where it comes from."""

    version: str
    checkout: str | None = None  # an orspec checkout, installed editable; POSIX, relative to the project
    wheels: str | None = None  # a folder of orspec's and the runtime's wheels; POSIX, relative to the project

    @property
    def requirement(self) -> str:
        """`orspec` compatible with `version`: the same minor release."""
        return f"orspec~={'.'.join(self.version.split('.')[:2])}.0"


def install_args(runtime: Runtime, toolchain: Toolchain) -> str:
    """The pip arguments before the project's own that bring orspec and the runtime (empty: the index does)."""
    args = ["--find-links", toolchain.wheels] if toolchain.wheels else []
    for editable in (toolchain.checkout, runtime.path):
        if editable:
            args += ["-e", editable]
    return "".join(f"{shlex.quote(arg)} " for arg in args)


def find_sources(
    orspec: Path | None = None, runtime: Path | None = None, out: Path | None = None
) -> tuple[Runtime, Toolchain]:
    """Where a project in `out` installs the runtime and orspec from.

    `orspec`: an orspec checkout (itself and its generated/python, both editable) or a folder of both
    wheels (pip looks there before the index). `runtime`: a local generated runtime, editable; when it
    is a checkout's generated/python, orspec comes from that checkout too. Neither: the package index,
    at the installed versions.
    """
    out = out or Path.cwd()
    if orspec is None and runtime is not None:
        beside = Path(os.path.normpath(runtime / ".." / ".."))
        if (_project_table(beside) or {}).get("name") == "orspec":
            orspec = beside
    if orspec is None:
        return find_runtime(runtime, out), Toolchain(__version__)
    toolchain = _toolchain(orspec, out)
    if runtime is not None:
        return find_runtime(runtime, out), toolchain
    if toolchain.checkout:
        return find_runtime(orspec / "generated" / "python", out, "--orspec"), toolchain
    version = _one_wheel(orspec, RUNTIME)
    if version is None:
        raise ScaffoldError(f"--orspec {orspec}: no {RUNTIME} wheel beside orspec's; build both with `{BUILD_WHEELS}`")
    return Runtime(version), toolchain


def _toolchain(orspec: Path, out: Path) -> Toolchain:
    """orspec from the folder `orspec`: a checkout of it, or a folder that holds its wheel."""
    if not orspec.is_dir():
        raise ScaffoldError(f"--orspec {orspec}: no such folder; give an orspec checkout or a folder of its wheels")
    project = _project_table(orspec) or {}
    if project.get("name") == "orspec" and isinstance(project.get("version"), str):
        return Toolchain(project["version"], checkout=_relative(orspec, out, "--orspec"))
    version = _one_wheel(orspec, "orspec")
    if version is None:
        raise ScaffoldError(
            f"--orspec {orspec}: neither an orspec checkout nor a folder of its wheels; give a checkout, "
            f"or a folder made with `{BUILD_WHEELS}`"
        )
    return Toolchain(version, wheels=_relative(orspec, out, "--orspec"))


def _one_wheel(folder: Path, distribution: str) -> str | None:
    """The version of `distribution`'s one wheel in `folder`, None without any; two or more are refused."""
    found = sorted(folder.glob(f"{distribution.replace('-', '_')}-*.whl"))
    if len(found) > 1:
        raise ScaffoldError(
            f"--orspec {folder}: {len(found)} {distribution} wheels ({', '.join(p.name for p in found)}); "
            "keep the one the project should install"
        )
    return found[0].name.split("-")[1] if found else None


def _project_table(folder: Path) -> dict | None:
    """The [project] table of `folder`/pyproject.toml; None when there is no readable one."""
    try:
        return tomllib.loads((folder / "pyproject.toml").read_text()).get("project") or {}
    except (OSError, tomllib.TOMLDecodeError):
        return None


def _relative(path: Path, out: Path, option: str) -> str:
    """`path` relative to the project in `out`, as the user spelt both (symlinks kept), POSIX.

    Refused when they share no folder but /: the path would name this machine's layout.
    """
    path_abs, out_abs = os.path.abspath(path), os.path.abspath(out)
    if os.path.commonpath([path_abs, out_abs]) == os.path.abspath(os.sep):
        raise ScaffoldError(
            f"{option} {path}: the project and {path} share no folder but /; put the project beside it "
            "(the path is written relative to the project)"
        )
    return Path(os.path.relpath(path_abs, out_abs)).as_posix()


def find_runtime(local: Path | None = None, out: Path | None = None, option: str = "--runtime") -> Runtime:
    """The installed runtime, or the generated one at `local` (a folder with its pyproject.toml), given by `option`."""
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
    project = _project_table(local)
    if project is None:
        raise ScaffoldError(f"{option} {local}: no readable pyproject.toml where a generated {RUNTIME} should be")
    if project.get("name") != RUNTIME or not isinstance(project.get("version"), str):
        raise ScaffoldError(f"{option} {local}: not a generated {RUNTIME} (e.g. generated/python of a build)")
    return Runtime(project["version"], _relative(local, out or Path.cwd(), option))


def runtime_stubs() -> dict[str, str]:
    """The runtime's `server.stubs.STUBS` (method -> operation), read from its source: importing the
    server package for one table would cost the scaffold half a second."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("openresponses_runtime")
    source = Path(spec.origin).parent / "server" / "stubs.py" if spec and spec.origin else None
    if source is None or not source.is_file():
        return {}
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "STUBS":
            return dict(ast.literal_eval(node.value)) if node.value is not None else {}
    return {}


def npm_runtime(runtime: Runtime, toolchain: Toolchain) -> str:
    """The npm package `openresponses-runtime` as a TypeScript project's dependency: the generated folder
    beside a local runtime (installed as a copy, `.npmrc`'s install-links, so zod comes with it), else
    the same release from the npm registry."""
    if toolchain.checkout:
        return f"file:{toolchain.checkout}/generated/typescript"
    if runtime.path:
        return f"file:{Path(runtime.path).parent.as_posix()}/typescript"
    return f"^{runtime.version.split('+')[0].replace('.dev', '-dev')}"


def render(
    names: Names,
    template: str = "demo",
    *,
    runtime: Runtime | None = None,
    toolchain: Toolchain | None = None,
    lang: str = "python",
) -> dict[str, tuple[bytes, int]]:
    """Every file of the project: relative path -> (content, mode)."""
    if template not in TEMPLATES:
        raise ScaffoldError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")
    if lang not in LANGS:
        raise ScaffoldError(f"unknown language {lang!r}; choose one of {', '.join(LANGS)}")
    import jinja2

    gateway = None
    if template != "demo":
        from openresponses_runtime.gateways.registry import GATEWAYS

        if template not in GATEWAYS:
            raise ScaffoldError(f"template {template!r} has no gateway in the runtime's registry")
        gateway = GATEWAYS[template]
    runtime = runtime or find_runtime()
    toolchain = toolchain or Toolchain(__version__)
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
        "gateway": gateway,
        "description": f"An Open Responses gateway in front of {gateway.upstream}."
        if gateway
        else "An Open Responses provider.",
        "runtime_requirement": runtime.requirement,
        "runtime_path": runtime.path,
        "orspec_requirement": toolchain.requirement,
        "orspec_checkout": toolchain.checkout,
        "wheels": toolchain.wheels,
        "install": install_args(runtime, toolchain),
        "stubs": runtime_stubs(),  # the operations the runtime leaves to the provider: method -> operation
        "npm_runtime": npm_runtime(runtime, toolchain),
        "upstream_env": _upstream_env(gateway),
    }
    if lang == "typescript":  # the same layout under typescript/, and a gateway's shared transport
        folders = ["typescript/common", f"typescript/{template}", *(["typescript/gateway"] if gateway else [])]
    else:
        folders = ["common", template]
    folders += ["vendor"] if names.vendor else []
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


def _upstream_env(gateway) -> dict[str, str] | None:
    """The environment variables that give a gateway its upstream's root and key (from its registry settings)."""
    if gateway is None:
        return None
    names = [name for name, _ in gateway.settings]
    return {
        "base": next(n for n in names if n.endswith("_BASE_URL")),
        "key": next(n for n in names if n.endswith("_API_KEY")),
        "model": next(n for n in names if n.endswith("_MODEL")),
    }


def scaffold(
    name: str,
    out: Path,
    *,
    template: str = "demo",
    vendor: str | None = None,
    force: bool = False,
    runtime_path: Path | None = None,
    orspec_path: Path | None = None,
    lang: str = "python",
) -> list[str]:
    """Write the project into `out`; the relative paths written. Refuses a non-empty `out` without `force`.

    `runtime_path`, `orspec_path`: where the project installs the runtime and orspec from (`find_sources`).
    """
    names = names_for(name, vendor)
    runtime, toolchain = find_sources(orspec_path, runtime_path, out)
    files = render(names, template, runtime=runtime, toolchain=toolchain, lang=lang)
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
    p.add_argument(
        "--template",
        choices=TEMPLATES,
        default="demo",
        help=f"demo (default), or a gateway to another model API: {', '.join(TEMPLATES[1:])}",
    )
    p.add_argument(
        "--lang",
        choices=LANGS,
        default="python",
        help="python (default), or typescript: a node:http project on the npm package (any template)",
    )
    p.add_argument("--force", action="store_true", help="write into a non-empty directory (overwrites, never deletes)")
    p.add_argument(
        "--runtime",
        type=Path,
        metavar="PATH",
        help="a local generated runtime (e.g. generated/python) for the project to install editable while developing",
    )
    p.add_argument(
        "--orspec",
        type=Path,
        metavar="PATH",
        help="where the project installs orspec and the runtime from: an orspec checkout (both editable) or a "
        f"folder of their wheels ({BUILD_WHEELS}); default: the package index",
    )
    p.set_defaults(run=cmd_scaffold)


def cmd_scaffold(args: argparse.Namespace) -> int:
    try:
        written = scaffold(
            args.name,
            args.out,
            template=args.template,
            vendor=args.vendor,
            force=args.force,
            runtime_path=args.runtime,
            orspec_path=args.orspec,
            lang=args.lang,
        )
    except ScaffoldError as exc:  # the arguments cannot make a project: a usage mistake
        print(f"orspec: {exc}", file=sys.stderr)
        return 2
    names = names_for(args.name, args.vendor)
    print(f"created {names.dist} ({args.template}) in {args.out}: {len(written)} files")
    where = "src/provider.ts" if args.lang == "typescript" else f"src/{names.package}/provider.py"
    print(f"  implement {names.class_name} in {where}; then, in {args.out}:")
    print("  see README.md for the two commands (run the server; run the tests)")
    if args.orspec is None and args.runtime is None:
        print("  they install orspec and the runtime from your package index; --orspec PATH takes them from an")
        print("  orspec checkout or a folder of their wheels instead")
    return 0
