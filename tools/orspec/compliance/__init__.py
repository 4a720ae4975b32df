"""`orspec compliance`: the Open Responses compliance suite, runnable against any server.

    from orspec.compliance import run
    results = run("http://127.0.0.1:8000/v1", "sk-...")
    assert all(r.ok for r in results), [r.line() for r in results if not r.ok]

Each case (`CASES`) says what it sends, what it checks and which MUST of the spec it proves.
"""

from importlib import import_module
from typing import Any

# Loaded on first use, so that registering the `compliance` command costs the CLI nothing.
_EXPORTS = {
    "CASES": "cases", "Case": "cases", "CheckFailed": "target", "Target": "target",
    "Result": "runner", "run": "runner", "select": "runner",
}  # fmt: skip

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
