"""Executors: where calibration runs execute. A bounded local pool (default) or a Ray cluster.

On Ray, every task runs :func:`twinforge.runs.jobs.run_job` on a worker of a Docker host: the worker
starts its own model proxy and runner, and writes to the shared records database (use a Postgres
URL, or a SQLite file on a shared filesystem). Start the cluster with ``ray start --head`` on one
host and ``ray start --address <head>:6379`` on the others (each with Docker, the base image and
twinforge installed), then ``twinforge calibrate --executor ray --address <head>:6379``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Protocol, TypeVar

from twinforge.runs.exceptions import RunsError

J = TypeVar("J")
Done = Callable[[Any, Any, BaseException | None], None]


class Executor(Protocol):
    """Runs jobs and reports each as it finishes: ``on_done(job, result, error)``."""

    def run(
        self,
        fn: Callable[[Any], Any],
        jobs: list[Any],
        on_done: Done,
        on_interrupt: Callable[[], Any] | None = None,
        may_start: Callable[[], bool] | None = None,
    ) -> None:
        """Run ``fn(job)`` for every job; on Ctrl-C call ``on_interrupt`` and stop starting new ones.

        ``may_start`` is asked just before each job would start (the spend ceiling,
        :meth:`twinforge.core.spend.SpendMeter.allows_new_run`); a job it refuses is not run and
        not reported: its row stays pending for the next call.
        """
        ...


class LocalExecutor:
    """A thread pool sized to the machine (Docker and model calls release the GIL).

    Args:
        workers: Parallel runs; default min(4, CPU cores).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or min(4, os.cpu_count() or 1)

    def run(
        self,
        fn: Callable[[Any], Any],
        jobs: list[Any],
        on_done: Done,
        on_interrupt: Callable[[], Any] | None = None,
        may_start: Callable[[], bool] | None = None,
    ) -> None:
        """Run the jobs, at most ``workers`` at once.

        On Ctrl-C (``KeyboardInterrupt`` in the calling thread) the jobs not started are cancelled,
        ``on_interrupt`` tells the running ones to stop (calibration: the proxy refuses their next
        model call), each still reports through ``on_done`` as it ends, and the interrupt is raised
        again. A second Ctrl-C while they end stops waiting. A job ``may_start`` refuses when a
        worker takes it up is cancelled unreported (its row stays pending).

        Every job's future exists before the first one is submitted, so an interrupt that lands
        anywhere in the submit loop (even between a submission and its bookkeeping) loses no
        running job's result.

        Raises:
            KeyboardInterrupt: After the running jobs ended.
        """
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="calibrate")
        futures: dict[Future[Any], Any] = {Future(): job for job in jobs}
        reported: set[Future[Any]] = set()
        try:
            for future, job in futures.items():
                pool.submit(_run_into, future, fn, job, may_start)
            for future in _completed(futures):
                if not future.cancelled():  # a job the spend ceiling kept from starting
                    self._report(future, futures[future], on_done)
                reported.add(future)
        except KeyboardInterrupt:
            for future in futures:
                future.cancel()  # only a job that has not started is cancelled
            pool.shutdown(wait=False, cancel_futures=True)
            if on_interrupt is not None:
                on_interrupt()
            running = [f for f in futures if not f.cancelled() and f not in reported]
            for future in _completed(running):
                self._report(future, futures[future], on_done)
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    @staticmethod
    def _report(future: Future[Any], job: Any, on_done: Done) -> None:
        error = future.exception()
        on_done(job, None if error else future.result(), error)


# How long the calling thread blocks at most before it looks at pending signals again, seconds.
WAKE_S = 0.25


def _completed(futures: Iterable[Future[Any]]) -> Iterator[Future[Any]]:
    """Yield each of ``futures`` once it is done (finished, failed or cancelled), in that order.

    Unlike ``as_completed``, the calling thread never blocks longer than ``WAKE_S`` (0.25 s) at once:
    CPython runs a signal's Python handler when the thread wakes, and a SIGINT that arrives just as
    the thread enters an unbounded lock wait is otherwise not acted on until some future completes
    (a Ctrl-C seen only when a run ends, minutes later; measured in tests/runs/test_interrupt.py,
    where 7 of 12 loaded runs saw it 30 s late). A future already done is yielded without waiting.
    """
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=WAKE_S, return_when=FIRST_COMPLETED)
        yield from done


def _run_into(
    future: Future[Any], fn: Callable[[Any], Any], job: Any, may_start: Callable[[], bool] | None = None
) -> None:
    """Run one job in a worker thread and settle its future (a cancelled future's job never runs).

    A job ``may_start`` refuses is cancelled instead of run.
    """
    if may_start is not None and not future.cancelled() and not may_start():
        future.cancel()  # _completed sees it once notified below
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn(job)
    except BaseException as exc:
        future.set_exception(exc)
    else:
        future.set_result(result)


def _token_auth_for(address: str | None) -> None:
    """Join a head that runs with token authentication when this host has its token.

    Ray reads the token from ``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token`` but,
    when connecting to an existing cluster with ``RAY_AUTH_MODE`` unset, does not send it; a head
    started while a token file existed then refuses the driver. An explicit ``RAY_AUTH_MODE`` is
    respected.
    """
    if address is None or "RAY_AUTH_MODE" in os.environ:
        return
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    token_file = Path(path) if path else Path.home() / ".ray" / "auth_token"
    if os.environ.get("RAY_AUTH_TOKEN") or token_file.is_file():
        os.environ["RAY_AUTH_MODE"] = "token"


def _probe(address: str | None, timeout_s: float = 5.0) -> None:
    """Fail fast, in one line, when nothing listens at a ``host:port`` address (Ray would wait minutes).

    Raises:
        RunsError: The address is malformed or refuses / does not answer a TCP connection.
    """
    if address is None or address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RunsError(f"Ray address {address!r} is not host:port (e.g. head:6379)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RunsError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from exc


def _reason(exc: BaseException) -> str:
    seen = [exc]
    while seen[-1].__cause__ is not None and len(seen) < 10:
        seen.append(seen[-1].__cause__)
    text = " ".join(str(e) for e in seen)
    if "InvalidAuthToken" in text or "AuthenticationError" in text:
        return (
            "the cluster uses token authentication and this host has no valid token "
            "(set RAY_AUTH_TOKEN or put the head's token in ~/.ray/auth_token)"
        )
    first = next((line.strip() for line in str(seen[0]).splitlines() if line.strip()), type(seen[0]).__name__)
    return first[:300]


class RayExecutor:
    """Ray tasks, one per run, on a local or remote cluster (docs/calibration.md, "Scale-out").

    Ray's usage statistics are switched off (nothing leaves this machine).

    Args:
        address: Cluster address (``host:6379``, ``auto``); ``None`` starts a local cluster.
        num_cpus: CPUs of a local cluster.

    Raises:
        RunsError: Ray is not installed, or the cluster cannot be reached (one line saying why).
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")  # no retry warnings per second on stderr
        _probe(address)
        _token_auth_for(address)  # before Ray is imported: it reads its configuration then
        try:
            import ray
        except ImportError as exc:
            raise RunsError("Ray is not installed; install it with: pip install 'twinforge[ray]'") from exc
        self.ray = ray
        if not ray.is_initialized():
            try:
                ray.init(
                    address=address,
                    num_cpus=num_cpus if address is None else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    ignore_reinit_error=True,
                    logging_level=logging.ERROR,
                )
            except Exception as exc:
                where = f"at {address}" if address else "(local)"
                raise RunsError(f"cannot reach the Ray cluster {where}: {_reason(exc)}") from exc

    def run(
        self,
        fn: Callable[[Any], Any],
        jobs: list[Any],
        on_done: Done,
        on_interrupt: Callable[[], Any] | None = None,
        may_start: Callable[[], bool] | None = None,
    ) -> None:
        """Submit every job as a task and collect them as they finish.

        ``on_interrupt`` is not used: a Ray task runs in a worker process with its own proxy. On
        Ctrl-C the driver exits, Ray ends the tasks it owns, and their leases lapse, so their rows are
        planned again (docs/calibration.md, "Runs").

        With ``may_start`` (a spend ceiling) at most as many tasks as the cluster has CPUs are in
        flight, and ``may_start`` is asked before each is submitted; a refused job is not submitted
        and its row stays pending. The driver's ``on_done`` counts each finished run's cost, since
        the workers' proxies are in other processes.
        """
        remote = self.ray.remote(num_cpus=1)(fn)
        queue = list(jobs)
        window = len(queue) if may_start is None else self._cpus()
        pending: dict[Any, Any] = {}

        def submit() -> None:
            while queue and len(pending) < window:
                job = queue.pop(0)
                if may_start is not None and not may_start():
                    continue
                pending[remote.remote(job)] = job

        submit()
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            job = pending.pop(ref)
            try:
                on_done(job, self.ray.get(ref), None)
            except Exception as exc:
                on_done(job, None, exc)
            submit()

    def _cpus(self) -> int:
        """The cluster's CPUs (at least 1): how many tasks are in flight under a spend ceiling."""
        resources: dict[str, float] = self.ray.cluster_resources()  # type: ignore[no-untyped-call]
        return max(int(resources.get("CPU", 1)), 1)

    def shutdown(self) -> None:
        """Disconnect from the cluster."""
        self.ray.shutdown()


def make_executor(name: str, *, workers: int | None = None, address: str | None = None) -> Executor:
    """``local`` or ``ray``.

    Raises:
        RunsError: Unknown executor.
    """
    if name == "local":
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(address, num_cpus=workers)
    raise RunsError(f"unknown executor {name!r}; valid: local, ray")
