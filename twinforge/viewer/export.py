"""``twinforge view --export DIR``: the same pages as a static site (docs/viewer.md, "Export").

The exporter starts at the overview and writes every page the written pages link to (pairs,
blueprints, runs, model calls, the run lists behind the report's cells with their pages,
compare pages), each as ``<path>/index.html`` with relative links, so the folder works from any
static host or straight from disk. Beside them: ``static/``, the report's plots, and ``api/``
with the overview, pair list and each pair and run as JSON. Each page carries the
Content-Security-Policy in a ``<meta>`` element.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from twinforge.core.atomic import atomic_write_text
from twinforge.viewer.app import STATIC
from twinforge.viewer.exceptions import NotFound, ViewerError
from twinforge.viewer.models import PairItem
from twinforge.viewer.records import RunFilter
from twinforge.viewer.site import Links, Page, Site


class Exported(BaseModel):
    """What an export wrote (``view --export --json`` prints it; the folder as a string).

    Attributes:
        folder: The export folder.
        pages: HTML pages written.
        api: JSON files written.
        missing: Pages linked but not found (e.g. a run record whose evidence is gone), one line each.
    """

    model_config = ConfigDict(extra="forbid")

    folder: Path
    pages: int = 0
    api: int = 0
    missing: list[str] = Field(default_factory=list)


def _path(page: Page) -> str:
    """Folder of a page in the export, mirroring :class:`Links`."""
    probe = Links(export=True)
    kind, *args = page
    link = {
        "overview": lambda: probe.overview(),
        "pairs": lambda: probe.pairs(int(args[0])),
        "pair": lambda: probe.pair(args[0]),
        "blueprint": lambda: probe.blueprint(args[0]),
        "section": lambda: probe.section(args[0]),
        "run": lambda: probe.run(args[0]),
        "call": lambda: probe.call(args[0], int(args[1])),
        "compare": lambda: probe.compare(args[0], args[1]),
    }
    if kind == "runs":
        return f"runs/_list/{args[0]}/{args[1]}/index.html"
    return link[kind]()


def _write(folder: Path, rel: str, text: str) -> None:
    target = folder / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)


def export_site(site: Site, folder: Path, progress: Callable[[int, int], None] | None = None) -> Exported:
    """Write the static site of a workspace into ``folder``.

    Args:
        site: The workspace's pages.
        folder: An empty or absent folder (an existing export, recognised by its ``static/style.css``
            and ``index.html``, is replaced).
        progress: Called with ``(written, known)`` page counts as the export goes.

    Returns:
        What was written.

    Raises:
        ViewerError: ``folder`` holds other files, or lies inside the workspace's tracked folders.
    """
    folder = folder.resolve()
    if folder.exists() and any(folder.iterdir()):
        if not ((folder / "index.html").is_file() and (folder / "static" / "style.css").is_file()):
            raise ViewerError(f"{folder} is not empty and not an earlier export; choose an empty folder")
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(STATIC, folder / "static")
    result = Exported(folder=folder)
    links_seen: dict[Page, RunFilter | None] = {("overview",): None}
    done: set[Page] = set()
    while len(done) < len(links_seen):
        for page, run_filter in list(links_seen.items()):
            if page in done:
                continue
            done.add(page)
            rel = _path(page)
            links = Links(export=True, depth=rel.count("/"))
            try:
                html = site.page(page, links, run_filter)
            except NotFound as exc:
                result.missing.append(str(exc))
                continue
            _write(folder, rel, html)
            result.pages += 1
            for linked, linked_filter in links.wanted.items():
                links_seen.setdefault(linked, linked_filter)
            if progress is not None:
                progress(result.pages, len(links_seen))
    result.api = _api(site, folder, done)
    for name in site.overview().plots:
        (folder / "plots").mkdir(exist_ok=True)
        (folder / "plots" / name).write_bytes(site.plot(name))
    return result


def _api(site: Site, folder: Path, pages: set[Page]) -> int:
    """Write ``api/`` JSON beside the pages: the overview, the pair list, each pair, blueprint and run."""

    def dump(rel: str, data: BaseModel) -> None:
        _write(folder, f"api/{rel}.json", data.model_dump_json())

    dump("overview", site.overview())
    items, _, _ = site.pair_items(1, everything=True)
    _write(folder, "api/pairs.json", TypeAdapter(list[PairItem]).dump_json(items).decode())
    written = 2
    getters: dict[str, tuple[str, Callable[[str], BaseModel]]] = {
        "pair": ("pairs", site.pair),
        "run": ("runs", site.run),
        "blueprint": ("blueprints", site.blueprint),
    }
    for kind, *args in sorted(pages):
        if kind not in getters:
            continue
        prefix, getter = getters[kind]
        try:
            dump(f"{prefix}/{args[0]}", getter(args[0]))
        except NotFound:
            continue
        written += 1
    return written
