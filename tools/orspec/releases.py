"""Dated releases: frozen copies of the core spec, a changelog drafted from `orspec diff`, and
"added in" dates for the docs.

A release lives in `spec/releases/<DATE>/`: `openapi.json` (the bundled core spec, without vendor
fragments, which vendors version on their own) and `CHANGELOG.md` (drafted from the diff against
the previous release, then edited by hand if wished). `spec/releases/index.yaml` records each
release's SHA-256, so a released file that changes afterwards fails the build. The build publishes
each release to `generated/releases/<DATE>/openapi.json` and the changelog to the docs.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from datetime import date as calendar_date
from pathlib import Path

import yaml

from .bundle import bundled_json
from .cache import digest
from .load import Document, display_path, load_file
from .problems import Problem, SpecError

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
INDEX = "index.yaml"


@dataclass
class Release:
    date: str
    folder: Path
    data: bytes  # the frozen openapi.json, byte for byte
    changelog: str

    @property
    def document(self) -> dict:
        return json.loads(self.data)


def date_problem(text: str) -> str | None:
    """Why `text` is no release date (YYYY-MM-DD naming a day of the calendar), or None if it is one."""
    if not DATE.match(text):
        return f"release date {text!r} is not YYYY-MM-DD"
    try:
        calendar_date.fromisoformat(text)
    except ValueError:  # the month or the day does not exist: 2026-13-45, 2026-02-30
        return f"release date {text} is not a day of the calendar"
    return None


def releases_dir(spec_root: Path) -> Path:
    return spec_root / "releases"


def load_releases(spec_root: Path) -> tuple[list[Release], list[Problem]]:
    """Every release, oldest first, checked against the index; problems for anything amiss."""
    folder = releases_dir(spec_root)
    index_path = folder / INDEX
    if not index_path.is_file():
        return [], []
    try:
        index: Document = load_file(index_path)
    except SpecError as exc:
        return [], exc.problems
    shown = index.display
    entries = index.data.get("releases") if isinstance(index.data, dict) else None
    if not isinstance(entries, list):
        return [], [Problem(shown, 1, "/releases", "expected a list of {date, sha256} entries")]
    releases, problems, seen = [], [], []
    for i, entry in enumerate(entries):
        at = f"/releases/{i}"
        date = entry.get("date") if isinstance(entry, dict) else None
        wrong = date_problem(date) if isinstance(date, str) else f"release date {date!r} is not YYYY-MM-DD"
        if wrong:
            problems.append(Problem(shown, index.line_of(at), at, wrong))
            continue
        if seen and date <= seen[-1]:
            problems.append(Problem(shown, index.line_of(at), at, f"release {date} is not later than {seen[-1]}"))
        seen.append(date)
        frozen = folder / date / "openapi.json"
        if not frozen.is_file():
            problems.append(Problem(shown, index.line_of(at), at, f"release {date} has no {display_path(frozen)}"))
            continue
        data = frozen.read_bytes()
        if digest(data) != entry.get("sha256"):
            problems.append(
                Problem(
                    display_path(frozen),
                    1,
                    "",
                    f"release {date} was changed after it was released; released files are immutable "
                    "(restore it, or make a new release)",
                )
            )
            continue
        notes = folder / date / "CHANGELOG.md"
        releases.append(Release(date, folder / date, data, notes.read_text() if notes.is_file() else ""))
    listed = {r.date for r in releases} | set(seen)
    for extra in sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name not in listed):
        problems.append(
            Problem(display_path(folder / extra), 0, "", f"release folder {extra} is not listed in {shown}")
        )
    return releases, problems


def make_release(spec_root: Path, core: dict, date: str) -> Release:
    """Freeze `core` (the bundled core spec) as release `date` and draft its changelog entry."""
    from .diff import diff_documents, render

    if wrong := date_problem(date):
        raise SpecError([Problem(display_path(spec_root), 0, "", wrong)])
    releases, problems = load_releases(spec_root)
    if problems:
        raise SpecError(problems)
    folder = releases_dir(spec_root)
    if releases and date <= releases[-1].date:
        raise SpecError(
            [Problem(display_path(folder), 0, "", f"release {date} must be later than {releases[-1].date}")]
        )
    frozen = copy.deepcopy(core)
    frozen.setdefault("info", {})["version"] = date
    data = bundled_json(frozen)
    if releases:
        changes = diff_documents(releases[-1].document, frozen)
        body = render(changes, "md") if changes else "No structural changes."
        notes = f"# {date}\n\nChanges since {releases[-1].date}, drafted by `orspec release` from `orspec diff`.\n\n{body}\n"
    else:
        notes = f"# {date}\n\nThe first release.\n"
    target = folder / date
    target.mkdir(parents=True)
    (target / "openapi.json").write_bytes(data)
    (target / "CHANGELOG.md").write_text(notes)
    entries = [{"date": r.date, "sha256": digest(r.data)} for r in releases] + [{"date": date, "sha256": digest(data)}]
    header = "# Dated releases of the core spec, oldest first. Written by `orspec release`; do not edit.\n"
    (folder / INDEX).write_text(header + yaml.safe_dump({"releases": entries}, sort_keys=False))
    return Release(date, target, data, notes)


_VERSION_LINE = re.compile(r"^(\s*version\s*:\s*)(\S.*?)?(\s+#.*)?$")


def set_info_version(root_file: Path, version: str) -> None:
    """Set `info.version` in the spec's root YAML file, editing only that line (comments and layout stay)."""
    document = load_file(root_file)
    line = document.line_of("/info/version") if "version" in (document.data.get("info") or {}) else 0
    lines = root_file.read_text().splitlines(keepends=True)
    match = _VERSION_LINE.match(lines[line - 1].rstrip("\r\n")) if 0 < line <= len(lines) else None
    if match is None:
        raise SpecError(
            [
                Problem(
                    document.display, line, "/info/version", f"set it to {version!r} by hand: not a `version: ...` line"
                )
            ]
        )
    ending = lines[line - 1][len(lines[line - 1].rstrip("\r\n")) :]
    lines[line - 1] = f'{match.group(1)}"{version}"{match.group(3) or ""}{ending}'
    root_file.write_text("".join(lines))


def release_outputs(releases: list[Release]) -> dict[str, bytes]:
    """The published copies and the changelog page, newest first."""
    out = {f"releases/{r.date}/openapi.json": r.data for r in releases}
    if releases:
        parts = [
            "# Changelog\n",
            "Every dated release of the core spec, newest first. Each release is frozen as",
            "`generated/releases/<date>/openapi.json`.\n",
        ]
        for release in reversed(releases):
            text = release.changelog.strip() or f"# {release.date}"
            parts.append(re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", text, flags=re.M) + "\n")
        out["docs/changelog.md"] = ("\n".join(parts).rstrip() + "\n").encode()
    return out
