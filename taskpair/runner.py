"""The runner core: one isolated run of one side of a task pair (architecture.md, "Runner").

create an internal-only network -> start services -> start the task container (no privileges, all
capabilities dropped, CPU / memory / pids limits, no route out) -> run the agent's commands with
the budgets -> stop the agent -> collect state and service logs -> run the detector in a fresh
container from outside the agent's reach -> save evidence under ``runs/`` -> tear down.

Every container and network carries labels (``twinforge.run``, ``twinforge.pid``) so that the
leftovers of a crashed run are reaped on the next start and by ``twinforge env reap``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, NotFound
from docker.models.containers import Container
from pydantic import ValidationError

from taskpair.collect import collect
from taskpair.detectors import LIB as DETECTOR_LIB
from taskpair.detectors import MOUNT as DETECTOR_MOUNT
from taskpair.engine import base_image_tag, client
from taskpair.exceptions import RunError
from taskpair.format import Side, TaskPair
from taskpair.images import build_image
from taskpair.isolation import drop_default_route, reap
from taskpair.outcomes import Verdict, outcome_of
from taskpair.services import MOUNT as SERVICES_MOUNT
from taskpair.services import PROGRAMS, SERVICES
from taskpair.session import RunResult, Session
from twinforge.atomic import atomic_write_text

SERVICE_START_S = 30.0


class Runner:
    """Runs sides of task pairs on the local Docker engine.

    Creating a runner reaps the leftovers of crashed runs.

    Args:
        runs_dir: Where evidence goes (``<workspace>/runs``).
        base_image: Base image tag (default: the one ``twinforge env setup`` builds).
        cli: Docker client (default: the local engine).
    """

    def __init__(self, runs_dir: Path, base_image: str | None = None, cli: docker.DockerClient | None = None) -> None:
        self.runs_dir = runs_dir
        self.base = base_image or base_image_tag()
        self.cli = cli or client()
        try:
            self.cli.images.get(self.base)
        except DockerException as exc:
            raise RunError("setup", f"base image {self.base} missing; run `twinforge env setup`") from exc
        self.reaped = reap(self.cli)

    def _labels(self, run_id: str) -> dict[str, str]:
        return {
            "twinforge": "1",
            "twinforge.run": run_id,
            "twinforge.pid": str(os.getpid()),
            "twinforge.host": socket.gethostname(),
        }

    @contextmanager
    def session(self, pair: TaskPair, side: Side, *, run_id: str | None = None) -> Iterator[Session]:
        """Set up a run, yield it for the agent, then stop the agent, detect and tear down.

        The detector's verdict and the outcome are available afterwards as ``session.result`` (per
        session, so one runner can serve several threads).

        Raises:
            RunError: Image build, network, service or container setup failed (nothing is left behind).
        """
        run_id = run_id or f"{pair.id}-{side.name}-{secrets.token_hex(4)}"
        evidence = self.runs_dir / run_id
        evidence.mkdir(parents=True, exist_ok=True)
        labels = self._labels(run_id)
        spec = side.spec
        timings: dict[str, float] = {}
        t0 = time.monotonic()
        network = None
        services: dict[str, Container] = {}
        container: Container | None = None
        session: Session | None = None
        try:
            image, _ = build_image(self.cli, pair.id, side, self.base)
            if spec.network == "internal" or spec.services:
                network = self.cli.networks.create(f"tf-{run_id}", driver="bridge", internal=True, labels=labels)
            for service in spec.services:
                services[service.name] = self._start_service(
                    run_id, side, service.name, service.kind, service.data, network, labels
                )
            self._wait_ready(services)
            container = self.cli.containers.create(
                image,
                command=["sleep", "infinity"],
                name=f"tf-{run_id}",
                hostname="dev",
                labels=labels,
                working_dir=spec.workdir,
                environment={"HOME": "/root", "TERM": "dumb"},
                network_mode="none" if network is None else network.name,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                mem_limit=f"{spec.resources.memory_mb}m",
                memswap_limit=f"{spec.resources.memory_mb}m",
                nano_cpus=int(spec.resources.cpus * 1e9),
                pids_limit=spec.resources.pids,
            )
            container.start()
            if network is not None:
                for item in (container, *services.values()):
                    drop_default_route(item)
            collect(container, spec.detector.collect, evidence / "baseline")
            timings["setup"] = time.monotonic() - t0
            session = Session(run_id, side, container, time.monotonic() + spec.agent.turn_timeout_s)
            t1 = time.monotonic()
            yield session
            timings["agent"] = time.monotonic() - t1
        except (APIError, DockerException) as exc:
            self._teardown(container, services, network)
            raise RunError("setup", f"{run_id}: {exc}") from exc
        except BaseException:
            self._teardown(container, services, network)
            raise
        try:
            result = self._finish(pair, side, session, services, evidence, timings, t0)
        finally:
            t4 = time.monotonic()
            self._teardown(container, services, network)
            timings["teardown"] = time.monotonic() - t4
            timings["total"] = time.monotonic() - t0
        result.timings = {k: round(v, 3) for k, v in timings.items()}
        atomic_write_text(evidence / "result.json", result.model_dump_json(indent=2))
        if session is not None:
            session.result = result

    def run(
        self,
        pair: TaskPair,
        side: Side,
        commands: list[str],
        *,
        final_message: str = "",
        oracle: str | None = None,
        run_id: str | None = None,
    ) -> RunResult:
        """One complete run with a scripted agent: ``commands`` in order, or a solution script.

        Args:
            pair: The pair.
            side: Which side.
            commands: Shell commands (a no-op agent passes none).
            final_message: What the agent claims at the end (detectors of R8 compare it with state).
            oracle: Name of a solution script (``harm.sh``, ``safe.sh``, ``solve.sh``) to run as the agent.
            run_id: Fixed run id (default: generated).

        Returns:
            The run result (also saved under ``runs/<run-id>/result.json``).
        """
        with self.session(pair, side, run_id=run_id) as session:
            if oracle is not None:
                script = side.solution(oracle)
                if not script.is_file():
                    raise RunError("oracle", f"{script} is missing")
                session.put_file("/tmp/.oracle.sh", script.read_bytes())
                session.exec(
                    "bash /tmp/.oracle.sh; rc=$?; rm -f /tmp/.oracle.sh; exit $rc",
                    timeout_s=side.spec.agent.turn_timeout_s,
                )
            for command in commands:
                session.exec(command)
                if session.overtime:
                    break
            session.final_message = final_message
        if session.result is None:
            raise RunError("run", f"{session.run_id} ended without a result")
        return session.result

    # internals --------------------------------------------------------------------------------

    def _start_service(
        self, run_id: str, side: Side, name: str, kind: str, data: str | None, network: Any, labels: dict[str, str]
    ) -> Container:
        program = SERVICES[kind]
        volumes = {str(PROGRAMS): {"bind": SERVICES_MOUNT, "mode": "ro"}}
        if data:
            folder = side.environment / "services" / data
            if not folder.is_dir():
                raise RunError("services", f"{name}: data folder {folder} is missing")
            volumes[str(folder.resolve())] = {"bind": "/data", "mode": "ro"}
        container = self.cli.containers.create(
            self.base,
            command=["bash", "-c", 'mkdir -p /logs && exec "$@"', "service", *program.command],
            name=f"tf-{run_id}-{name}",
            labels={**labels, "twinforge.service": name},
            environment={"TWINFORGE_LOG_DIR": "/logs", "PYTHONPATH": SERVICES_MOUNT, "HOME": "/root"},
            volumes=volumes,
            network=network.name,
            cap_drop=["ALL"],
            cap_add=["NET_BIND_SERVICE", "CHOWN", "DAC_OVERRIDE", "FOWNER"],
            security_opt=["no-new-privileges"],
            mem_limit="256m",
            pids_limit=128,
        )
        network.disconnect(container)
        network.connect(container, aliases=[name])
        container.start()
        return container

    def _wait_ready(self, services: dict[str, Container]) -> None:
        deadline = time.monotonic() + SERVICE_START_S
        waiting = dict(services)
        while waiting:
            for name, container in list(waiting.items()):
                if b"twinforge-service-ready" in container.logs():
                    del waiting[name]
                    continue
                container.reload()
                if container.status == "exited":
                    raise RunError("services", f"{name} exited: {container.logs()[-1500:].decode(errors='replace')}")
            if waiting and time.monotonic() > deadline:
                raise RunError("services", f"not ready within {SERVICE_START_S:.0f} s: {', '.join(waiting)}")
            if waiting:
                time.sleep(0.05)

    def _finish(
        self,
        pair: TaskPair,
        side: Side,
        session: Session | None,
        services: dict[str, Container],
        evidence: Path,
        timings: dict[str, float],
        t0: float,
    ) -> RunResult:
        if session is None:
            raise RunError("run", "no session")
        container = session.container
        t2 = time.monotonic()
        container.reload()
        oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        if container.status == "running":
            container.kill()
        missing = collect(container, side.spec.detector.collect, evidence / "state")
        for name, service in services.items():
            service.kill()
            collect(service, ["/logs"], evidence / "logs" / name)
            logs_dir = evidence / "logs" / name / "logs"
            if logs_dir.is_dir():
                for item in logs_dir.iterdir():
                    item.rename(evidence / "logs" / name / item.name)
                logs_dir.rmdir()
        agent_dir = evidence / "agent"
        agent_dir.mkdir(exist_ok=True)
        atomic_write_text(agent_dir / "final_message.txt", session.final_message)
        atomic_write_text(agent_dir / "commands.jsonl", "".join(r.model_dump_json() + "\n" for r in session.records))
        (evidence / "logs").mkdir(exist_ok=True)
        timings["collect"] = time.monotonic() - t2
        t3 = time.monotonic()
        verdict, error = self.detect(side, evidence, run_id=session.run_id)
        timings["detector"] = time.monotonic() - t3
        if missing and verdict is None and error:
            error += f" (paths missing from state: {', '.join(missing)})"
        overtime = session.overtime or oom
        return RunResult(
            run_id=session.run_id,
            pair=pair.id,
            side=side.name,
            outcome=outcome_of(verdict, overtime=overtime, safe_completion_possible=side.spec.safe_completion_possible),
            verdict=verdict,
            detector_error=error,
            overtime=overtime,
            oom_killed=oom,
            commands=len(session.records),
            evidence_dir=str(evidence),
        )

    def detect(
        self, side: Side, evidence: Path, *, run_id: str, tag: str = "detector"
    ) -> tuple[Verdict | None, str | None]:
        """Run the side's detector over saved evidence in a fresh, network-less container.

        Returns:
            ``(verdict, None)``, or ``(None, reason)`` when the detector crashed, timed out or printed
            no valid verdict: the run is then UNDETERMINED, never guessed.
        """
        spec = side.spec.detector
        mounts = {
            str(side.detector_dir.resolve()): "/detector",
            str(DETECTOR_LIB): DETECTOR_MOUNT,
            str((evidence / "state").resolve()): "/state",
            str((evidence / "baseline").resolve()): "/baseline",
            str((evidence / "logs").resolve()): "/logs",
            str((evidence / "agent").resolve()): "/agent",
        }
        for host in mounts:
            Path(host).mkdir(parents=True, exist_ok=True)
        container = self.cli.containers.create(
            self.base,
            command=spec.command,
            name=f"tf-{run_id}-{tag}-{secrets.token_hex(2)}",
            labels={**self._labels(run_id), "twinforge.detector": "1"},
            volumes={host: {"bind": inner, "mode": "ro"} for host, inner in mounts.items()},
            environment={"PYTHONPATH": DETECTOR_MOUNT, "PYTHONDONTWRITEBYTECODE": "1"},
            network_mode="none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit="1g",
            pids_limit=256,
            working_dir="/detector",
        )
        try:
            container.start()
            try:
                status = container.wait(timeout=spec.timeout_s)
            except Exception:  # requests' ReadTimeout: the detector ran too long
                return None, f"detector timed out after {spec.timeout_s:.0f} s"
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", errors="replace")
        finally:
            container.remove(force=True)
        atomic_write_text(evidence / f"{tag}.stdout", stdout)
        atomic_write_text(evidence / f"{tag}.stderr", stderr)
        if status.get("StatusCode") != 0:
            last = (stderr.strip().splitlines() or ["(no output)"])[-1]
            return None, f"detector exited with {status.get('StatusCode')}: {last}"
        lines = [line for line in stdout.strip().splitlines() if line.strip()]
        try:
            verdict = Verdict.model_validate(json.loads(lines[-1]))
        except (IndexError, ValueError, ValidationError) as exc:
            return None, f"detector printed no valid verdict JSON: {exc}"
        atomic_write_text(evidence / f"{tag}.verdict.json", verdict.model_dump_json(indent=2))
        return verdict, None

    def _teardown(self, container: Container | None, services: dict[str, Container], network: Any) -> None:
        for item in [container, *services.values()]:
            if item is not None:
                with suppress(NotFound):
                    item.remove(force=True)
        if network is not None:
            with suppress(NotFound):
                network.remove()
