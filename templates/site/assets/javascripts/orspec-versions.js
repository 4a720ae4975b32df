// The version picker of the reference pages (the mkdocs hook puts its placeholder on each page).
// It reads versions.json, which `orspec build` writes: every version's folder, pages and anchors.
// Switching keeps the reader on the same schema, event or operation when the other version has it,
// and takes them to that version's index when it has not; at the top of a page, to the same page.

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
  name.textContent = "Version ";
  name.append(select);
  bar.prepend(name);
  bar.classList.add("orspec-versions-ready");
}

function start() {
  for (const bar of document.querySelectorAll(".orspec-versions:not(.orspec-versions-ready)")) mount(bar);
}

// Material's instant navigation swaps the page without a load; document$ says when.
if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(start);
else start();
