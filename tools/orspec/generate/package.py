"""The runtime package around the models: `__init__`, and hand-written modules copied verbatim."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from .pyformat import docstring_text, format_python

PACKAGE = "python/openresponses_runtime"


def environment(templates: Path) -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates)),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # output is Python; strings from the spec go through `pyrepr`
    )
    env.filters["pyrepr"] = repr
    env.filters["docstring"] = docstring_text
    return env


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
    init = env.get_template("package/__init__.py.jinja").render(version=_SpecText(version))
    out = {f"{PACKAGE}/__init__.py": format_python(init).encode()}
    runtime = templates / "runtime"
    for path in sorted(runtime.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[f"{PACKAGE}/{path.relative_to(runtime).as_posix()}"] = path.read_bytes()
    return out
