"""Executors: where calibration runs execute. A bounded local pool (default) or a Ray cluster.

On Ray, every task runs :func:`calibration.jobs.run_job` on a worker of a Docker host: the worker
starts its own model proxy and runner, and writes to the shared records database (use a Postgres
URL, or a SQLite file on a shared filesystem). Start the cluster with ``ray start --head`` on one
host and ``ray start --address <head>:6379`` on the others (each with Docker, the base image and
twinforge installed), then ``twinforge calibrate --executor ray --address <head>:6379``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Protocol, TypeVar

from calibration.exceptions import CalibrationError

J = TypeVar("J")
Done = Callable[[Any, Any, BaseException | None], None]


class Executor(Protocol):
    """Runs jobs and reports each as it finishes: ``on_done(job, result, error)``."""

    def run(self, fn: Callable[[Any], Any], jobs: list[Any], on_done: Done) -> None:
        """Run ``fn(job)`` for every job."""
        ...


class LocalExecutor:
    """A thread pool sized to the machine (Docker and model calls release the GIL).

    Args:
        workers: Parallel runs; default min(4, CPU cores).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or min(4, os.cpu_count() or 1)

    def run(self, fn: Callable[[Any], Any], jobs: list[Any], on_done: Done) -> None:
        """Run the jobs, at most ``workers`` at once."""
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="calibrate") as pool:
            futures = {pool.submit(fn, job): job for job in jobs}
            for future in as_completed(futures):
                error = future.exception()
                on_done(futures[future], None if error else future.result(), error)


class RayExecutor:
    """Ray tasks, one per run, on a local or remote cluster.

    Args:
        address: Cluster address (``host:6379``, ``auto``); ``None`` starts a local cluster.
        num_cpus: CPUs of a local cluster.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise CalibrationError("Ray is not installed; install it with: pip install 'twinforge[ray]'") from exc
        self.ray = ray
        if not ray.is_initialized():
            ray.init(
                address=address,
                num_cpus=num_cpus if address is None else None,
                include_dashboard=False,
                log_to_driver=False,
                ignore_reinit_error=True,
            )

    def run(self, fn: Callable[[Any], Any], jobs: list[Any], on_done: Done) -> None:
        """Submit every job as a task and collect them as they finish."""
        remote = self.ray.remote(num_cpus=1)(fn)
        pending = {remote.remote(job): job for job in jobs}
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            job = pending.pop(ref)
            try:
                on_done(job, self.ray.get(ref), None)
            except Exception as exc:
                on_done(job, None, exc)

    def shutdown(self) -> None:
        """Disconnect from the cluster."""
        self.ray.shutdown()


def make_executor(name: str, *, workers: int | None = None, address: str | None = None) -> Executor:
    """``local`` or ``ray``.

    Raises:
        CalibrationError: Unknown executor.
    """
    if name == "local":
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(address, num_cpus=workers)
    raise CalibrationError(f"unknown executor {name!r}; valid: local, ray")
