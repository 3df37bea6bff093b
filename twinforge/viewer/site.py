"""The pages of one workspace, for the server and the static export alike (docs/viewer.md).

:class:`Site` reads the workspace (never writes: docs/viewer.md, "Read-only") and renders each page
with jinja2, autoescaping everything. :class:`Links` makes every URL a page holds: absolute routes
when served (``/runs/<run-id>``), relative file paths in an export (``../../runs/<run-id>/index.html``),
where it also records each page it linked so the exporter can write exactly the pages reachable.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from twinforge.core.workspace import Workspace
from twinforge.runs.records import records_url
from twinforge.viewer import files
from twinforge.viewer.exceptions import NotFound
from twinforge.viewer.models import (
    BlueprintView,
    CallDetail,
    Overview,
    PairItem,
    PairView,
    RunList,
    RunView,
    SectionView,
)
from twinforge.viewer.overview import PLOTS, overview
from twinforge.viewer.pairs import PairReader
from twinforge.viewer.records import PAGE_SIZE, RunFilter, RunRecords
from twinforge.viewer.runs import RunReader, run_item

PAIRS_PAGE = 100
"""Pairs per page of the pair list."""
CSP = (
    "default-src 'none'; img-src 'self'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""Content-Security-Policy of every page: no script at all, styles and images from the server only."""
CSP_EXPORT = "default-src 'none'; img-src 'self'; style-src 'self'; form-action 'none'; base-uri 'none'"
"""The same policy in an exported page's ``<meta>`` (which cannot carry ``frame-ancestors``)."""

Page = tuple[str, ...]
"""A page as the exporter names it, e.g. ``("run", run_id)`` or ``("runs", filter_key, "2")``."""


@dataclass
class Links:
    """URLs of the pages.

    Attributes:
        export: Relative file links (a static export) rather than routes.
        depth: Folder depth of the page being rendered (export only).
        wanted: Pages linked so far (export only), with the filter of each run list.
    """

    export: bool = False
    depth: int = 0
    wanted: dict[Page, RunFilter | None] = field(default_factory=dict)

    def _to(self, page: Page, route: str, path: str, run_filter: RunFilter | None = None) -> str:
        if not self.export:
            return route
        self.wanted.setdefault(page, run_filter)
        return "../" * self.depth + path

    def overview(self) -> str:
        """``/``."""
        return self._to(("overview",), "/", "index.html")

    def pairs(self, page: int = 1) -> str:
        """``/pairs``."""
        route = "/pairs" + (f"?page={page}" if page > 1 else "")
        return self._to(
            ("pairs", str(page)), route, "pairs/index.html" if page == 1 else f"pairs/page-{page}/index.html"
        )

    def pair(self, pair_id: str) -> str:
        """``/pairs/<pair-id>``."""
        return self._to(("pair", pair_id), f"/pairs/{quote(pair_id)}", f"pairs/{quote(pair_id)}/index.html")

    def section(self, key: str) -> str:
        """``/sections/<key>``: one report table with every cell linked to its runs."""
        return self._to(("section", key), f"/sections/{key}", f"sections/{key}/index.html")

    def blueprint(self, blueprint_id: str) -> str:
        """``/blueprints/<blueprint-id>``."""
        return self._to(
            ("blueprint", blueprint_id),
            f"/blueprints/{quote(blueprint_id)}",
            f"blueprints/{quote(blueprint_id)}/index.html",
        )

    def run(self, run_id: str) -> str:
        """``/runs/<run-id>``."""
        return self._to(("run", run_id), f"/runs/{quote(run_id)}", f"runs/{quote(run_id)}/index.html")

    def call(self, run_id: str, n: int) -> str:
        """``/runs/<run-id>/calls/<n>``: one call's raw request and response."""
        return self._to(
            ("call", run_id, str(n)), f"/runs/{quote(run_id)}/calls/{n}", f"runs/{quote(run_id)}/calls/{n}/index.html"
        )

    def runs(self, params: dict[str, str] | None = None, page: int = 1) -> str:
        """``/runs?pair=&model=&harness=&outcome=...&page=``."""
        run_filter = RunFilter.of(params or {})
        query = {**run_filter.params(), **({"page": str(page)} if page > 1 else {})}
        route = "/runs" + (f"?{urlencode(query)}" if query else "")
        return self._to(
            ("runs", run_filter.key(), str(page)), route, f"runs/_list/{run_filter.key()}/{page}/index.html", run_filter
        )

    def compare(self, a: str, b: str) -> str:
        """``/compare?a=<run-id>&b=<run-id>``: two runs side by side."""
        return self._to(
            ("compare", a, b), f"/compare?{urlencode({'a': a, 'b': b})}", f"compare/{quote(a)}/{quote(b)}/index.html"
        )

    def static(self, name: str) -> str:
        """A file of the viewer's own ``static/`` folder."""
        return f"/static/{name}" if not self.export else "../" * self.depth + f"static/{name}"

    def plot(self, name: str) -> str:
        """A report plot from ``runs/report/``."""
        return f"/plots/{name}" if not self.export else "../" * self.depth + f"plots/{name}"

    def api(self, path: str) -> str:
        """A JSON API route (served only; an export links its ``api/`` files instead)."""
        return f"/api/{path}" if not self.export else "../" * self.depth + f"api/{path}.json"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


class Site:
    """Every page of one workspace.

    Args:
        workspace: The workspace to show.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.records = RunRecords(records_url(workspace) if workspace.config.records.url else _default_url(workspace))
        self.pair_reader = PairReader(workspace)
        self.run_reader = RunReader(workspace.root)
        self.env = Environment(
            loader=PackageLoader("twinforge.viewer", "templates"),
            undefined=StrictUndefined,
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals["pct"] = _pct
        self._lock = threading.Lock()
        self._computing = threading.Lock()
        self._refresh: threading.Thread | None = None
        self._overview: tuple[tuple[tuple[object, ...], float], Overview] | None = None

    # data

    def overview(self) -> Overview:
        """The overview; served from memory, recomputed when the records or the workspace's files change.

        The first call computes it (``serve`` does so before it answers). Later, when the records
        changed, the last overview is served with ``refreshing`` set while a background thread
        computes the new one, so no request waits for a recomputation over 100,000 records.
        """
        version = (self.records.version(), _stamp(self.workspace.root))
        with self._lock:
            cached = self._overview
            if cached is not None and cached[0] == version:
                return cached[1]
            if cached is not None:
                if self._refresh is None or not self._refresh.is_alive():
                    self._refresh = threading.Thread(target=self._compute, args=(version,), daemon=True)
                    self._refresh.start()
                return cached[1].model_copy(update={"refreshing": True})
        return self._compute(version)

    def _compute(self, version: tuple[tuple[object, ...], float]) -> Overview:
        with self._computing:
            with self._lock:
                if self._overview is not None and self._overview[0] == version:
                    return self._overview[1]
            found = overview(self.workspace, self.records, self.pair_reader)
            found.computed_at = datetime.now(UTC)
            with self._lock:
                self._overview = (version, found)
            return found

    def settle(self) -> None:
        """Wait for a background refresh of the overview, if one runs."""
        thread = self._refresh
        if thread is not None:
            thread.join()

    def section(self, key: str) -> SectionView:
        """One report table (calibration, or one evaluated model x harness) by its key.

        Raises:
            NotFound: No such section.
        """
        found = next((s for s in self.overview().sections if s.key == key), None)
        if found is None:
            raise NotFound(f"report section {key[:40]!r}")
        return found

    def pair_items(self, page: int = 1, *, everything: bool = False) -> tuple[list[PairItem], int, int]:
        """One page of the pair list (or all of it): ``(items, page, pages)``."""
        ids = self.pair_reader.ids()
        pages = max(1, -(-len(ids) // PAIRS_PAGE))
        page = min(max(page, 1), pages)
        chosen = ids if everything else ids[(page - 1) * PAIRS_PAGE : page * PAIRS_PAGE]
        benchmark = self.pair_reader.benchmark()
        counts = self.records.counts(chosen)
        return [self.pair_reader.item(pid, counts.get(pid, 0), benchmark) for pid in chosen], page, pages

    def pair(self, pair_id: str) -> PairView:
        """A pair page's data.

        Raises:
            NotFound: No such pair.
        """
        files.checked("pair", pair_id, files.PAIR_ID)
        runs = [run_item(r) for r in self.records.of_pair(pair_id)]
        found = self.pair_reader.view(pair_id, runs)
        if found is None:
            raise NotFound(f"pair {pair_id!r}")
        return found

    def run_list(self, params: dict[str, str], page: int = 1) -> RunList:
        """One page of a filtered run list."""
        run_filter = RunFilter.of(params)
        found = self.records.page(run_filter, page)
        return RunList(
            filter=run_filter.params(),
            total=found.total,
            page=found.page,
            pages=found.pages,
            per_page=PAGE_SIZE,
            runs=[run_item(r) for r in found.rows],
        )

    def run(self, run_id: str) -> RunView:
        """A run page's data.

        Raises:
            NotFound: No finished run with that id.
        """
        row = self.records.run(files.checked("run", run_id, files.RUN_ID))
        if row is None:
            raise NotFound(f"run {run_id!r}")
        return self.run_reader.view(row)

    def call(self, run_id: str, n: int) -> CallDetail:
        """One model call's raw request and response.

        Raises:
            NotFound: No such run or call.
        """
        row = self.records.run(files.checked("run", run_id, files.RUN_ID))
        found = self.run_reader.call(row, n) if row is not None else None
        if found is None:
            raise NotFound(f"call {n} of run {run_id!r}")
        return found

    def blueprint(self, blueprint_id: str) -> BlueprintView:
        """A blueprint page's data.

        Raises:
            NotFound: No such blueprint file.
        """
        found = self.pair_reader.blueprint(blueprint_id)
        if found is None:
            raise NotFound(f"blueprint {blueprint_id!r}")
        return found

    def plot(self, name: str) -> bytes:
        """A report plot's bytes.

        Raises:
            NotFound: Not one of the report's plots, or not written yet.
        """
        data = files.read_bytes(self.workspace.root, "runs", "report", name) if name in PLOTS else None
        if data is None:
            raise NotFound(f"plot {name!r}")
        return data

    # pages

    def render(self, template: str, links: Links, **context: Any) -> str:
        """Render one page template."""
        return self.env.get_template(template).render(links=links, csp=CSP_EXPORT if links.export else "", **context)

    def page(self, page: Page, links: Links, run_filter: RunFilter | None = None) -> str:
        """The HTML of one page.

        Raises:
            NotFound: The page names something the workspace does not hold.
        """
        kind, *args = page
        if kind == "overview":
            return self.render("overview.html.j2", links, view=self.overview())
        if kind == "section":
            return self.render("section.html.j2", links, section=self.section(args[0]))
        if kind == "pairs":
            items, number, pages = self.pair_items(int(args[0]))
            return self.render("pairs.html.j2", links, items=items, page=number, pages=pages)
        if kind == "pair":
            return self.render("pair.html.j2", links, view=self.pair(args[0]))
        if kind == "blueprint":
            return self.render("blueprint.html.j2", links, view=self.blueprint(args[0]))
        if kind == "run":
            return self.render("run.html.j2", links, view=self.run(args[0]))
        if kind == "call":
            return self.render("call.html.j2", links, view=self.call(args[0], int(args[1])))
        if kind == "runs":
            params = (run_filter or RunFilter()).params()
            return self.render("runs.html.j2", links, view=self.run_list(params, int(args[1])), params=params)
        if kind == "compare":
            return self.render("compare.html.j2", links, a=self.run(args[0]), b=self.run(args[1]))
        raise NotFound(f"page {kind!r}")


def _default_url(workspace: Workspace) -> str:
    """``.twinforge/records.db`` without creating the folder (``records_url`` would make it)."""
    return f"sqlite:///{workspace.root / '.twinforge' / 'records.db'}"


def _stamp(root: Path) -> float:
    """Latest change time of the files the overview reads besides the records."""
    stamps = [0.0]
    for name in ("blueprints", "calibration", "tasks", "benchmark.yaml", "runs/report"):
        try:
            stamps.append((root / name).stat().st_mtime)
        except OSError:
            continue
    return max(stamps)
