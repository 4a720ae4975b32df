"""mkdocs hook (see `hooks:` in mkdocs.yml): serve `generated/docs/` as `docs/reference/`, and the
site's shipped assets (the reference stylesheet, Mermaid) from orspec's `templates/site/`.

The reference pages are build output, so they live in `generated/` with everything else the build
writes, and `docs/` stays hand-written. This hook adds them to the site under `reference/` at build
time, so plain `mkdocs build` and `mkdocs serve` work on a fresh clone without a symlink or a copy.
Reference pages the nav in mkdocs.yml does not list (a new vendor fragment, say) are appended to
its Reference section, so a strict build never drops one.

`ORSPEC_GENERATED_DOCS` points the hook at another directory (e.g. `orspec build --out DIR`);
`extra: {orspec_reference: ""}` in the config serves the reference at the site's root instead
(`orspec docs build` in a project without its own mkdocs.yml).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from orspec.project import TEMPLATES

PREFIX = "reference"
SECTION = "Reference"
ASSETS = TEMPLATES / "site"
_OUTSIDE_LINK = re.compile(r"\[([^\]]*)\]\(\.\./[^)]*\)")  # [text](../guides/x.md): out of the reference


def _prefix(config) -> str:
    return str((config.extra or {}).get("orspec_reference", PREFIX)).strip("/")


def _source(config) -> Path:
    override = os.environ.get("ORSPEC_GENERATED_DOCS")
    if override:
        return Path(override).resolve()
    return Path(config.config_file_path).resolve().parent / "generated" / "docs"


def on_files(files: Files, config) -> Files:
    source = _source(config)
    if not (source / "index.md").is_file():
        raise PluginError(f"{source} has no reference pages; run `orspec build` first")
    prefix = _prefix(config)
    pages = sorted(p.relative_to(source).as_posix() for p in source.rglob("*.md"))
    uris = [f"{prefix}/{rel}" if prefix else rel for rel in pages]
    for rel, uri in zip(pages, uris, strict=True):
        if files.get_file_from_path(uri) is not None:
            raise PluginError(f"docs/{uri} would hide the generated page {source / rel}; remove it")
        files.append(File.generated(config, uri, abs_src_path=str(source / rel)))
    for asset in sorted(p for p in ASSETS.rglob("*") if p.is_file() and p.suffix != ".jinja"):
        uri = asset.relative_to(ASSETS).as_posix()
        if files.get_file_from_path(uri) is None:  # the project's own copy wins
            files.append(File.generated(config, uri, abs_src_path=str(asset)))
    _complete_nav(config, uris)
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """In a reference-only site (no prefix) there are no guides: a link out of the reference keeps its text."""
    if _prefix(config):
        return markdown
    return _OUTSIDE_LINK.sub(r"\1", markdown)


def _mentioned(nav) -> set[str]:
    found: set[str] = set()
    items = nav if isinstance(nav, list) else [nav]
    for item in items:
        if isinstance(item, str):
            found.add(item)
        elif isinstance(item, dict):
            for value in item.values():
                found |= _mentioned(value)
        elif isinstance(item, list):
            found |= _mentioned(item)
    return found


def _complete_nav(config, uris: list[str]) -> None:
    nav = config.nav
    if not isinstance(nav, list):
        return
    missing = [uri for uri in uris if uri not in _mentioned(nav)]
    if not missing:
        return
    for entry in nav:
        if isinstance(entry, dict) and isinstance(entry.get(SECTION), list):
            entry[SECTION].extend(missing)
            return
    nav.append({SECTION: missing})


def on_serve(server, config, builder):
    """`mkdocs serve` (so `orspec docs serve`): send each write at once on the connections it accepts.

    Its server writes a response's headers and body apart; with Nagle's algorithm on, the body waits
    for the browser's delayed ACK, about 40 ms on every file of every page.
    """
    accept = server.get_request

    def get_request():
        connection, address = accept()
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    server.get_request = get_request
    return server
