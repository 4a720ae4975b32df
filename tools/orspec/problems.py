"""Problems found in a spec, collected as values rather than raised one at a time."""

from __future__ import annotations

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
        where = f"{self.file}:{self.line}" if self.line else self.file
        prefix = "" if self.level is Level.ERROR else "warning: "
        return f"{where}: {self.pointer or '/'}: {prefix}{self.message}"


class SpecError(Exception):
    """Raised when a stage cannot go on; carries every problem found so far."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.level is Level.ERROR]
