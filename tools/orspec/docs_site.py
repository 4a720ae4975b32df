"""`orspec docs build|serve`: the mkdocs site, from docs/ and generated/docs/ (see mkdocs.yml).

A project without its own mkdocs.yml (say, a folder holding only spec/) gets the reference-only
site from orspec's `templates/site/mkdocs.yml.jinja`: the generated pages at the site's root.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .project import TEMPLATES, find_root
from .usage import UsageError, project_path

INSTALL_HINT = "pip install 'orspec[docs]'"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("docs", help="build or serve the documentation site (mkdocs)")
    actions = p.add_subparsers(dest="docs_command", required=True, metavar="ACTION")

    b = actions.add_parser("build", help="mkdocs build --strict: any warning fails the build")
    b.add_argument("--site-dir", type=Path, help="output directory (default: the project's site/)")
    b.add_argument("--config-file", type=Path, help="mkdocs config (default: the project's mkdocs.yml)")
    b.set_defaults(run=cmd_docs_build)

    s = actions.add_parser("serve", help="serve the site locally, rebuilt on every change")
    s.add_argument("--dev-addr", default="127.0.0.1:8000", help="address to serve on (default: %(default)s)")
    s.add_argument("--config-file", type=Path, help="mkdocs config (default: the project's mkdocs.yml)")
    s.set_defaults(run=cmd_docs_serve)


@contextmanager
def _config(args: argparse.Namespace, site_dir: Path | None = None) -> Iterator[tuple[Path, Path, bool]]:
    """The mkdocs config, the default site folder, and whether the config is temporary: the project's
    mkdocs.yml and site/ beside it, or the reference-only site's config and the project's site/."""
    for module, package in (("mkdocs", "mkdocs"), ("material", "mkdocs-material")):
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"{package} is not installed; install the docs extra: {INSTALL_HINT}")
    if args.config_file is None and (root := find_root()) is not None and not (root / "mkdocs.yml").is_file():
        with _reference_site(root, (site_dir or root / "site").resolve()) as config:
            yield config, root / "site", True
        return
    config = project_path(args.config_file, "mkdocs.yml", "--config-file")
    if not config.is_file():
        raise UsageError(f"no mkdocs config at {config}")
    yield config.resolve(), config.resolve().parent / "site", False


@contextmanager
def _reference_site(root: Path, site_dir: Path) -> Iterator[Path]:
    import jinja2
    import yaml

    generated = Path(os.environ.get("ORSPEC_GENERATED_DOCS") or root / "generated" / "docs").resolve()
    if not (generated / "index.md").is_file():
        raise UsageError(f"{generated} has no reference pages; run `orspec build` first")
    try:
        info = (yaml.safe_load((root / "spec" / "openapi.yaml").read_text()) or {}).get("info") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        info = {}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    env.filters["yaml"] = lambda value: json.dumps(str(value))  # a JSON string is a YAML string
    template = env.from_string((TEMPLATES / "site" / "mkdocs.yml.jinja").read_text())
    with tempfile.TemporaryDirectory(prefix="orspec-site-") as tmp:
        folder = Path(tmp)
        (folder / "docs").mkdir()
        config = folder / "mkdocs.yml"
        config.write_text(
            template.render(
                title=f"{info.get('title') or 'API'} reference",
                docs_dir=folder / "docs",
                site_dir=site_dir,
                hook=Path(__file__).with_name("mkdocs_hooks.py"),
            )
        )
        os.environ["ORSPEC_GENERATED_DOCS"] = str(generated)
        yield config


def _mkdocs(*args: str, config: Path, replace: bool = False) -> int:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's end-of-life banner is not a build problem
    command = [sys.executable, "-m", "mkdocs", *args, "--config-file", str(config)]
    if replace and os.name == "posix":  # a long-running server: let it own the process and its signals
        os.chdir(config.parent)
        sys.stdout.flush()
        os.execve(sys.executable, command, env)
    return subprocess.call(command, cwd=config.parent, env=env)


def cmd_docs_build(args: argparse.Namespace) -> int:
    with _config(args, args.site_dir) as (config, default_site, _):
        site = (args.site_dir or default_site).resolve()
        code = _mkdocs("build", "--strict", "--clean", "--site-dir", str(site), config=config)
    if code == 0:
        print(f"built the docs site into {site}")
    else:
        print(f"orspec: mkdocs build failed (exit {code}); see the messages above", file=sys.stderr)
    return code


def cmd_docs_serve(args: argparse.Namespace) -> int:
    from .listening import listen

    host, _, port = args.dev_addr.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--dev-addr {args.dev_addr} is not HOST:PORT; pass e.g. 127.0.0.1:8000")
    listen(host, int(port), flags=("--dev-addr", "--dev-addr")).close()  # a busy port said now, not after a build
    with _config(args) as (config, _, temporary):
        # Hand the process to mkdocs, unless a temporary config must be cleaned up afterwards.
        return _mkdocs("serve", "--strict", "--dev-addr", args.dev_addr, config=config, replace=not temporary)
