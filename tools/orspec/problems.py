"""Problems found in a spec, collected as values rather than raised one at a time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Problem:
    """One finding, located as `file:line: /json/pointer: message`."""

    file: str
    line: int
    pointer: str
    message: str
    level: Level = Level.ERROR

    def __str__(self) -> str:
        where = f"{self.file or '<spec>'}:{self.line}"  # always file:line, 0 where no line exists
        prefix = "" if self.level is Level.ERROR else "warning: "
        message = self.message.replace("\r", "\\r").replace("\n", "\\n")  # one problem, one line
        return f"{where}: {shown_pointer(self.pointer)}: {prefix}{message}"


def shown_pointer(pointer: str) -> str:
    """A JSON pointer as printed: whitespace, control characters and `%` percent-encoded, as in a
    URI fragment (RFC 6901, section 6), so the pointer is one word and the report stays parseable."""
    if not pointer:
        return "/"
    return re.sub(r"[\s%\x00-\x1f\x7f]", lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), pointer)


class SpecError(Exception):
    """Raised when a stage cannot go on; carries every problem found so far."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class TooBig(Exception):
    """Stops loading or bundling at a size limit; the problem that says why is already recorded."""


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.level is Level.ERROR]
