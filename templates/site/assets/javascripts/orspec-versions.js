// The version picker of the reference pages (the mkdocs hook puts its placeholder on each page),
// shown in the site's header so that it stays in view as the reader scrolls. It reads
// versions.json, which `orspec build` writes: every version's folder, pages and anchors. Switching
// keeps the reader on the same schema, event or operation when the other version has it, and takes
// them to that version's index when it has not; at the top of a page, to the same page.
//
// Search results are labelled with the version of the page they are on, and limited to the page's
// version (on a guide, the latest release), with a switch to see every version's.

const pageUrl = (page) => (page === "index.md" ? "" : page.replace(/\.md$/, "/"));

/** The anchor the reader is at: the URL's, else the last heading scrolled past. */
function currentAnchor() {
  if (location.hash.length > 1) return decodeURIComponent(location.hash.slice(1));
  let found = "";
  for (const heading of document.querySelectorAll(".md-content h2[id], .md-content h3[id]")) {
    if (heading.getBoundingClientRect().top > 120) break;
    found = heading.id;
  }
  return found;
}

/** Where the same place is in `target`, relative to the reference's root. */
export function placeIn(target, page, anchor) {
  if (anchor) {
    const where = target.anchors[anchor];
    return where ? `${target.folder}${pageUrl(where)}#${anchor}` : target.folder;
  }
  return target.pages.includes(page) ? `${target.folder}${pageUrl(page)}` : target.folder;
}

function label(version) {
  if (version.status === "latest") return `${version.id} (latest release)`;
  if (version.status === "draft") return "draft (unreleased)";
  return version.id;
}

async function mount(bar) {
  const { root, version, page } = bar.dataset;
  let versions;
  try {
    const answer = await fetch(`${root}versions.json`);
    versions = (await answer.json()).versions;
  } catch {
    return; // a page opened from disk: no picker, the links still work
  }
  const select = document.createElement("select");
  select.className = "orspec-version-select";
  select.setAttribute("aria-label", "Spec version");
  for (const v of versions) {
    const option = new Option(label(v), v.id, false, v.id === version);
    select.append(option);
  }
  select.addEventListener("change", () => {
    const target = versions.find((v) => v.id === select.value);
    location.href = root + placeIn(target, page, currentAnchor());
  });
  const name = document.createElement("label");
  name.className = "orspec-header-version";
  name.title = "Spec version";
  name.append(select);
  const header = document.querySelector(".md-header__inner");
  header?.querySelector(".orspec-header-version")?.remove();
  if (header) header.insertBefore(name, header.querySelector(".md-header__option, .md-search") ?? null);
  else bar.prepend(name);
  bar.classList.add("orspec-versions-ready");
}

// ---- Search, by version ----

const SITE = new URL("../../", import.meta.url); // this script is served from assets/javascripts/
let known; // {reference: URL of the reference's root, versions}, once versions.json has come

async function reference() {
  if (known === undefined) {
    known = (async () => {
      const prefix = document.querySelector('meta[name="orspec-reference"]')?.content ?? "reference/";
      const root = new URL(prefix, SITE);
      const answer = await fetch(new URL("versions.json", root));
      return { root: root.href, versions: (await answer.json()).versions };
    })().catch(() => null);
  }
  return known;
}

/** The version a page of the site belongs to, or null for a page outside the reference. */
function versionOf(href, { root, versions }) {
  if (!href.startsWith(root)) return null;
  const rel = href.slice(root.length);
  return versions.find((v) => v.folder && rel.startsWith(v.folder)) ?? versions.find((v) => !v.folder);
}

let everyVersion = false; // the reader's switch, for this page

function labelResult(item, site, current) {
  const link = item.querySelector("a[href]");
  if (!link || item.dataset.orspecVersion !== undefined) return;
  const version = versionOf(link.href, site);
  item.dataset.orspecVersion = version ? version.id : "";
  if (!version) return;
  const tag = document.createElement("span");
  tag.className = "orspec-search-version";
  tag.textContent = label(version);
  item.querySelector(".md-search-result__title, h1, h2")?.prepend(tag, " ");
  item.hidden = !everyVersion && version.id !== current;
}

async function mountSearch() {
  const list = document.querySelector(".md-search-result__list");
  const meta = document.querySelector(".md-search-result__meta");
  const site = await reference();
  if (!list || !meta || !site || list.dataset.orspecVersions) return;
  list.dataset.orspecVersions = "on";
  const bar = document.querySelector(".orspec-versions");
  const latest = site.versions.find((v) => v.status === "latest") ?? site.versions[0];
  const current = bar?.dataset.version ?? latest.id;
  const scope = site.versions.find((v) => v.id === current) ?? latest;
  const toggle = document.createElement("label");
  toggle.className = "orspec-search-scope";
  const box = document.createElement("input");
  box.type = "checkbox";
  box.name = "orspec-every-version";
  const others = document.createElement("span");
  toggle.append(box, ` every version, not only ${label(scope)}`, others);
  const count = () => {
    const hidden = [...list.children].filter((item) => item.hidden).length;
    others.textContent = hidden ? ` (${hidden} more)` : "";
  };
  box.addEventListener("change", () => {
    everyVersion = box.checked;
    for (const item of list.children) {
      const id = item.dataset.orspecVersion;
      item.hidden = Boolean(id) && !everyVersion && id !== current;
    }
    count();
  });
  const place = () => {
    if (!toggle.isConnected) meta.after(toggle);
    for (const item of list.children) labelResult(item, site, current);
    count();
  };
  new MutationObserver(place).observe(list, { childList: true });
  place();
}

function start() {
  for (const bar of document.querySelectorAll(".orspec-versions:not(.orspec-versions-ready)")) mount(bar);
  mountSearch();
}

// Material's instant navigation swaps the page without a load; document$ says when.
if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(start);
else start();
