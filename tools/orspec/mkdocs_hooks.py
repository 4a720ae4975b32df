"""mkdocs hook (see `hooks:` in mkdocs.yml): serve `generated/docs/` as `docs/reference/`, and the
site's shipped assets (the reference stylesheet, Mermaid) from orspec's `templates/site/`.

The reference pages are build output, so they live in `generated/` with everything else the build
writes, and `docs/` stays hand-written. This hook adds them to the site under `reference/` at build
time, so plain `mkdocs build` and `mkdocs serve` work on a fresh clone without a symlink or a copy.
Reference pages the nav in mkdocs.yml does not list (a new vendor fragment, say) are appended to
its Reference section, so a strict build never drops one.

Each dated release's reference (`generated/docs/<date>/`) is served under `reference/<date>/`, with
its frozen `openapi.json` beside it; `versions.json` (written by the build) feeds the version picker
(`assets/javascripts/orspec-versions.js`) that the hook puts at the top of every reference page, and
the draft's pages say they are the draft. Each version's TypeScript stream checker, with its zod
models, is shipped as ES modules under `assets/orspec/<version>/` (the draft's from
`generated/typescript/`, a release's generated modules from `generated/docs/<date>/checker/`), with
the zod copy in `templates/site/assets/javascripts/zod/` that they import: the console on a version's
operation pages (`assets/javascripts/orspec-console.js`) checks a live stream with that version's
checker and schemas, as `orspec check-stream` does.

`ORSPEC_GENERATED_DOCS` points the hook at another directory (e.g. `orspec build --out DIR`);
`extra: {orspec_reference: ""}` in the config serves the reference at the site's root instead
(`orspec docs build` in a project without its own mkdocs.yml).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import socket
from pathlib import Path

from mkdocs.config.config_options import ExtraScriptValue
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from orspec.project import TEMPLATES

PREFIX = "reference"
SECTION = "Reference"
RELEASES_SECTION = "Releases"
ASSETS = TEMPLATES / "site"
VERSIONS = "versions.json"
CHECKER = "assets/orspec"  # where the site serves each version's stream checker, in a folder per version
CHECKER_ENTRY = "src/streaming/index.js"  # the checker's modules are this one and what it imports
ZOD = "assets/javascripts/zod/index.js"
LATEST = "latest/"  # `reference/latest/...` in a guide's link: the latest release's page (the draft's without one)
_IMPORT = re.compile(r'^\s*(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"', re.M)
SCRIPTS = ("assets/javascripts/orspec-versions.js", "assets/javascripts/orspec-console.js")
_OUTSIDE_LINK = re.compile(r"\[([^\]]*)\]\(\.\./[^)]*\)")  # [text](../guides/x.md): out of the reference


def _prefix(config) -> str:
    return str((config.extra or {}).get("orspec_reference", PREFIX)).strip("/")


def _source(config) -> Path:
    override = os.environ.get("ORSPEC_GENERATED_DOCS")
    if override:
        return Path(override).resolve()
    return Path(config.config_file_path).resolve().parent / "generated" / "docs"


def _versions(config) -> list[dict]:
    path = _source(config) / VERSIONS
    if not path.is_file():  # an older build's reference: the draft alone
        return [{"id": "draft", "folder": "", "status": "draft", "pages": [], "anchors": {}}]
    return json.loads(path.read_text())["versions"]


def on_config(config):
    """The picker and the console, as ES modules (the console imports the checker's modules)."""
    for script in SCRIPTS:
        if script not in [str(s) for s in config.extra_javascript]:
            value = ExtraScriptValue(script)
            value.type = "module"
            config.extra_javascript.append(value)
    return config


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
    downloads = {VERSIONS: source / VERSIONS, "openapi.json": source.parent / "openapi.json"}
    for version in _versions(config):
        if version["folder"]:
            downloads[f"{version['folder']}openapi.json"] = source.parent / "releases" / version["id"] / "openapi.json"
    for rel, path in downloads.items():
        if path.is_file():
            files.append(File.generated(config, f"{prefix}/{rel}" if prefix else rel, abs_src_path=str(path)))
    for uri, content in _checkers(source, _versions(config)).items():
        files.append(File.generated(config, uri, content=content))
    for asset in sorted(p for p in ASSETS.rglob("*") if p.is_file() and p.suffix != ".jinja"):
        uri = asset.relative_to(ASSETS).as_posix()
        if files.get_file_from_path(uri) is None:  # the project's own copy wins
            files.append(File.generated(config, uri, abs_src_path=str(asset)))
    _complete_nav(config, uris)
    return files


def _checkers(source: Path, versions: list[dict]) -> dict[str, str]:
    """Each version's stream checker: the modules `CHECKER_ENTRY` imports, a release's generated ones
    from its `checker/` folder, and `zod` imported from the site's copy."""
    from orspec.generate.versions import CHECKER as RELEASE_CHECKER
    from orspec.write import is_generated

    package = source.parent / "typescript"
    if not (package / CHECKER_ENTRY).is_file():
        return {}  # a build without the TypeScript output: the console shows streams unchecked
    modules = _module_graph(package, CHECKER_ENTRY)
    out = {}
    for version in versions:
        own = source / version["folder"] / RELEASE_CHECKER if version["folder"] else package
        for rel in modules:
            borrowed = not (own / rel).is_file()  # a hand-written module, the same in every version
            text = (package / rel if borrowed else own / rel).read_text()
            if borrowed and is_generated(text.encode()):
                raise PluginError(f"{own} has no {rel} of release {version['id']}; run `orspec build`")
            uri = f"{CHECKER}/{version['id']}/{rel}"
            zod = posixpath.relpath(ZOD, posixpath.dirname(uri))
            out[uri] = text.replace('from "zod"', f'from "{zod}"')
    return out


def _module_graph(folder: Path, entry: str) -> list[str]:
    """`entry` and every module it imports, directly or not, by relative path (bare imports left out)."""
    found, todo = set(), [entry]
    while todo:
        rel = posixpath.normpath(todo.pop())
        if rel in found:
            continue
        found.add(rel)
        for target in _IMPORT.findall((folder / rel).read_text()):
            if target.startswith("."):
                todo.append(posixpath.join(posixpath.dirname(rel), target))
    return sorted(found)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """The version bar on reference pages; a guide's link into `reference/latest/` leads to the
    latest release's folder; in a reference-only site (no prefix) there are no guides, so a link out
    of the reference keeps its text."""
    prefix = _prefix(config)
    if prefix and f"{prefix}/{LATEST}" in markdown:
        latest = next((v for v in _versions(config) if v["status"] == "latest"), {"folder": ""})
        link = re.compile(rf"(\]\((?:\.\./)*){re.escape(prefix)}/{LATEST}")
        markdown = link.sub(lambda m: f"{m.group(1)}{prefix}/{latest['folder']}", markdown)
    markdown = _with_version_bar(markdown, page.file.src_uri, page.url, prefix, config)
    if prefix:
        return markdown
    return _OUTSIDE_LINK.sub(r"\1", markdown)


def _with_version_bar(markdown: str, uri: str, url: str, prefix: str, config) -> str:
    """A reference page with the picker's placeholder first; a draft page also says it is the draft."""
    if prefix and not uri.startswith(prefix + "/"):
        return markdown
    rel = uri[len(prefix) + 1 :] if prefix else uri
    versions = _versions(config)
    version = next((v for v in versions if v["folder"] and rel.startswith(v["folder"])), versions[-1])
    if version["status"] != "draft" and not version["folder"]:
        return markdown
    page = rel[len(version["folder"]) :]
    if page in ("changelog.md",) or rel.endswith(VERSIONS):
        return markdown
    # Markdown links are relative to the source file (mkdocs rewrites them); HTML ones to the page's URL.
    root = _relative(prefix or ".", posixpath.dirname(uri) or ".")
    url_root = _relative(prefix or ".", posixpath.dirname(url) or ".")
    bar = (
        f'<div class="orspec-versions" data-root="{url_root}" data-version="{version["id"]}" data-page="{page}">'
        f'<a href="{url_root}{version["folder"]}openapi.json" download>openapi.json ({version["id"]})</a></div>\n\n'
    )
    latest = next((v for v in versions if v["status"] == "latest"), None)
    if version["status"] == "draft" and latest is not None:
        bar += (
            '!!! warning "Draft"\n    This is the unreleased draft of the spec, which may change before its next'
            f" release. The latest release is [{latest['id']}]({root}{latest['folder']}index.md).\n\n"
        )
    head, sep, body = markdown.partition("\n")
    return f"{head}{sep}\n{bar}{body}" if head.startswith("# ") else bar + markdown


def on_post_page(output: str, page, config) -> str:
    """Where the reference is, for the search's version labels (orspec-versions.js)."""
    prefix = _prefix(config)
    meta = f'<meta name="orspec-reference" content="{prefix + "/" if prefix else ""}">'
    return output.replace("</head>", meta + "</head>", 1)


def on_post_build(config) -> None:
    """`llms.txt` and `llms-full.txt` beside each version's reference, and at the site's root the
    latest release's (the draft's without a release), with a line for every version (see orspec/llms.py)."""
    from orspec.llms import llms_files

    source, prefix, site = _source(config), _prefix(config), Path(config.site_dir)
    versions = _versions(config)
    latest = next((v for v in versions if v["status"] == "latest"), versions[-1])
    listing = []
    for version in versions:
        folder = source / version["folder"]
        names = sorted(p.name for p in folder.glob("*.md"))
        names = (["index.md"] if "index.md" in names else []) + [n for n in names if n != "index.md"]
        pages = {(n[:-3] + "/" if n != "index.md" else ""): (folder / n).read_text() for n in names}
        if not prefix:  # a reference-only site: no guides to link to
            pages = {url: _OUTSIDE_LINK.sub(r"\1", text) for url, text in pages.items()}
        base = f"{prefix}/{version['folder']}" if prefix else version["folder"]
        what = "unreleased draft" if version["status"] == "draft" else f"release {version['id']}"
        summary = f"The {config.site_name} reference, {what}, as plain Markdown."
        short, full = llms_files(f"{config.site_name}: {version['id']}", summary, pages)
        target = site / base
        target.mkdir(parents=True, exist_ok=True)
        (target / "llms.txt").write_text(short)
        (target / "llms-full.txt").write_text(full)
        listing.append(
            f"- [{what}]({base}llms.txt): its pages; all of them in one file: [{base}llms-full.txt]({base}llms-full.txt)"
        )
        if version is latest:
            short, full = llms_files(config.site_name, summary, pages, base)
            (site / "llms-full.txt").write_text(full)
            root = short
    (site / "llms.txt").write_text(root + "\n## Versions\n\n" + "\n".join(listing) + "\n")


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


def _relative(target: str, start: str) -> str:
    """The relative URL prefix from folder `start` to folder `target`: "" or "../", "../../" ..."""
    path = posixpath.relpath(target, start)
    return "" if path == "." else path + "/"


def _complete_nav(config, uris: list[str]) -> None:
    nav = config.nav
    if not isinstance(nav, list):
        return
    missing = [uri for uri in uris if uri not in _mentioned(nav)]
    prefix = _prefix(config)
    released = []
    for version in _versions(config):
        if version["folder"]:
            folder = f"{prefix}/{version['folder']}" if prefix else version["folder"]
            pages = [uri for uri in missing if uri.startswith(folder)]
            pages.sort(key=lambda uri: (not uri.endswith("/index.md"), uri))  # its index first
            label = f"{version['id']} (latest)" if version["status"] == "latest" else version["id"]
            released.append({label: pages})
            missing = [uri for uri in missing if not uri.startswith(folder)]
    if released:  # before the draft's Reference section: the latest release is the reader's default
        at = next((i for i, e in enumerate(nav) if isinstance(e, dict) and SECTION in e), len(nav))
        nav.insert(at, {RELEASES_SECTION: released})
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
