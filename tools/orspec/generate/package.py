"""The runtime distribution around the models: its `pyproject.toml`, README and `__init__`.

The runtime's hand-written modules are ordinary source beside them (`project.RUNTIME`); the build
copies them only into an output folder other than their own (`pipeline.runtime_source`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from .. import __version__ as GENERATOR_VERSION
from .pyformat import docstring_text, format_python

DISTRIBUTION = "python"
PACKAGE = f"{DISTRIBUTION}/openresponses_runtime"
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_RELEASE = re.compile(r"\d+(?:\.\d+)*")


def environment(templates: Path) -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates)),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # output is Python; strings from the spec go through `pyrepr`
    )
    env.filters["pyrepr"] = repr
    env.filters["docstring"] = docstring_text
    env.filters["toml"] = lambda value: json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML string
    return env


def runtime_version(spec_version: str, generator: str = GENERATOR_VERSION) -> str:
    """The runtime's PEP 440 version: the spec release, then the generator's version.

    `2026-04-24` built by orspec 0.1.0 is `2026.4.24.0.1.0`; a spec whose `info.version` is already
    numeric (`2.3.0`) keeps its numbers, and anything else counts as release `0`.
    """
    spec_version = spec_version.strip()
    date = _DATE.fullmatch(spec_version)
    if date:
        release = ".".join(str(int(part)) for part in date.groups())
    else:
        numbers = _RELEASE.match(spec_version)
        release = ".".join(str(int(n)) for n in numbers.group().split(".")) if numbers else "0"
    return f"{release}.{generator}"


class _SpecText:
    """A string from the spec for a template written before filters were required.

    `{{ value }}` (inside a docstring) renders it escaped for a docstring, and
    `{{ value | pyrepr }}` renders the exact string literal.
    """

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return docstring_text(self.text)

    def __repr__(self) -> str:
        return repr(self.text)


def generate_package(document: dict, templates: Path) -> dict[str, bytes]:
    version = str((document.get("info") or {}).get("version", ""))
    env = environment(templates)
    context = {
        "version": _SpecText(version),
        "runtime_version": runtime_version(version),
        "generator_version": GENERATOR_VERSION,
    }
    init = env.get_template("package/__init__.py.jinja").render(context)
    out = {f"{PACKAGE}/__init__.py": format_python(init).encode()}
    for name in ("pyproject.toml", "README.md"):
        out[f"{DISTRIBUTION}/{name}"] = env.get_template(f"package/{name}.jinja").render(context).encode()
    return out
