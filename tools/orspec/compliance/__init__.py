"""`orspec compliance`: the Open Responses compliance suite, runnable against any server.

    from orspec.compliance import run
    results = run("http://127.0.0.1:8000/v1", "sk-...")
    assert all(r.ok for r in results), [r.line() for r in results if not r.ok]

Each case (`CASES`) says what it sends, what it checks and which MUST of the spec it proves.
"""

from .cases import CASES, Case
from .client import CheckFailed, Client
from .runner import Result, run, select

__all__ = ["CASES", "Case", "CheckFailed", "Client", "Result", "run", "select"]
