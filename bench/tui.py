"""Queue app bench (docs/workspace.md): first paint with 10,000 blueprints and key-press latency.

Targets on this machine: first paint <= 1.0 s, median key press -> updated screen <= 50 ms, and the
process under 300 MB resident. Times are taken from the app's own frames: the clock stops at the
first frame the compositor produces that shows the expected state (Pilot's idle waits would add a
fixed ~80 ms). Each figure is printed next to a floor measured in the same run the same way: a bare
Textual app with a DataTable of the same rows (the widget a first version would use).

Usage: python bench/tui.py [--n 10000] [--presses 60]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import DataTable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bench/ shares tests/support's fakes

from tests.support.samples import build_workspace
from twinforge.core.workspace import Workspace
from twinforge.tui.app import QueueApp
from twinforge.tui.screens.queue import QueueScreen
from twinforge.tui.widgets import QueueList

SIZE = (160, 48)


class FrameClock:
    """Mixin: remembers when each frame was produced and whether it showed the awaited state."""

    awaited: Callable[[], bool] = staticmethod(lambda: False)
    shown_at: float | None = None

    def _display(self, screen: Any, renderable: Any) -> None:
        if renderable is not None and self.shown_at is None and self.awaited():
            self.shown_at = time.perf_counter()
        super()._display(screen, renderable)  # type: ignore[misc]


class TimedQueue(FrameClock, QueueApp):
    pass


class BareTable(FrameClock, App[None]):
    def __init__(self, rows: list[tuple[str, ...]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield DataTable(cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "cell", "status", "total", "task")
        for row in self.rows:
            table.add_row(*row, key=row[0])
        table.focus()


async def wait_shown(app: FrameClock, timeout: float = 300) -> float:  # generous: shared, loaded machines
    deadline = time.perf_counter() + timeout
    while app.shown_at is None:
        if time.perf_counter() > deadline:
            raise TimeoutError("the awaited state never reached the screen")
        await asyncio.sleep(0.0005)
    return app.shown_at


async def first_paint(make: Callable[[], FrameClock], ready: Callable[[FrameClock], bool]) -> float:
    started = time.perf_counter()
    app = make()
    app.awaited = lambda: ready(app)
    async with app.run_test(size=SIZE):  # type: ignore[attr-defined]
        return await wait_shown(app) - started


def queue_ready(app: Any) -> bool:
    screen = app.screen
    return isinstance(screen, QueueScreen) and bool(screen.query_one(QueueList).rows) and screen.current is not None


def table_ready(app: Any) -> bool:
    tables = app.screen.query(DataTable)
    return bool(tables) and tables.first().row_count > 0


async def key_latencies(app: Any, presses: int, moved: Callable[[Any, int], bool]) -> list[float]:
    times = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for n in range(1, presses + 1):
            app.shown_at = None
            app.awaited = lambda n=n: moved(app, n)
            started = time.perf_counter()
            app._driver.send_message(events.Key("down", None))
            times.append(await wait_shown(app) - started)
            await pilot.pause()
    return times


def queue_moved(app: Any, n: int) -> bool:
    screen = app.screen
    rows = screen.query_one(QueueList).rows
    return bool(screen.current == rows[n].id)


def table_moved(app: Any, n: int) -> bool:
    return app.screen.query_one(DataTable).cursor_row == n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--presses", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        ws = build_workspace(Path(tmp) / "ws", args.n, invalid=True, totals=[18, 19, 20, 21, 22, 23])
        print(f"built {args.n} blueprints (all needs_review) + 1 invalid file in {time.perf_counter() - started:.1f} s")
        rows = [(f"S1-R1-{i:08x}", "S1-R1", "needs_review", "20", f"Task {i}") for i in range(args.n)]
        (ws.state_dir / "index.db").unlink(missing_ok=True)

        def queue() -> TimedQueue:
            return TimedQueue(Workspace.open(ws.root), "bench")

        cold = asyncio.run(first_paint(queue, queue_ready))
        warm = statistics.median(asyncio.run(first_paint(queue, queue_ready)) for _ in range(3))
        bare = statistics.median(asyncio.run(first_paint(lambda: BareTable(rows), table_ready)) for _ in range(3))
        print(f"first paint with {args.n} rows in the queue (median of 3):")
        print(f"  floor: bare DataTable            {bare:6.3f} s")
        print(
            f"  queue app, index warm            {warm:6.3f} s   {warm / bare:4.2f}x floor   "
            f"(target <= 1.0 s: {'met' if warm <= 1.0 else 'MISSED'})"
        )
        print(
            f"  queue app, index cold            {cold:6.3f} s   {cold / bare:4.2f}x floor   "
            "(first open of a workspace: each file parsed once, then cached)"
        )
        ours = asyncio.run(key_latencies(queue(), args.presses, queue_moved))
        floor = asyncio.run(key_latencies(BareTable(rows), args.presses, table_moved))
        q, f = statistics.median(ours) * 1000, statistics.median(floor) * 1000
        qp, fp = sorted(ours)[int(0.9 * len(ours))] * 1000, sorted(floor)[int(0.9 * len(floor))] * 1000
        print(f"key press -> frame showing the result, median (p90) of {args.presses}:")
        print(f"  floor: bare DataTable cursor     {f:6.1f} ms ({fp:.1f})")
        print(
            f"  queue app: next + detail pane    {q:6.1f} ms ({qp:.1f})   {q / f:4.2f}x floor   "
            f"(target <= 50 ms: {'met' if q <= 50 else 'MISSED'})"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB (target < 300 MB: {'met' if peak < 300 else 'MISSED'})")


if __name__ == "__main__":
    main()
