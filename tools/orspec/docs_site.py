"""`orspec docs build|serve`: the mkdocs site, from docs/ and generated/docs/ (see mkdocs.yml)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from .cli import UsageError, _project_path

INSTALL_HINT = "pip install -e '.[docs]'"


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


def _config(args: argparse.Namespace) -> Path:
    config = _project_path(args.config_file, "mkdocs.yml", "--config-file")
    if not config.is_file():
        raise UsageError(f"no mkdocs config at {config}")
    for module, package in (("mkdocs", "mkdocs"), ("material", "mkdocs-material")):
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"{package} is not installed; install the docs extra: {INSTALL_HINT}")
    return config.resolve()


def _mkdocs(*args: str, config: Path, replace: bool = False) -> int:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's end-of-life banner is not a build problem
    command = [sys.executable, "-m", "mkdocs", *args, "--config-file", str(config)]
    if replace and os.name == "posix":  # a long-running server: let it own the process and its signals
        os.chdir(config.parent)
        sys.stdout.flush()
        os.execve(sys.executable, command, env)
    return subprocess.call(command, cwd=config.parent, env=env)


def cmd_docs_build(args: argparse.Namespace) -> int:
    config = _config(args)
    site = (args.site_dir or config.parent / "site").resolve()
    code = _mkdocs("build", "--strict", "--clean", "--site-dir", str(site), config=config)
    if code == 0:
        print(f"built the docs site into {site}")
    else:
        print(f"orspec: mkdocs build failed (exit {code}); see the messages above", file=sys.stderr)
    return code


def cmd_docs_serve(args: argparse.Namespace) -> int:
    return _mkdocs("serve", "--strict", "--dev-addr", args.dev_addr, config=_config(args), replace=True)
