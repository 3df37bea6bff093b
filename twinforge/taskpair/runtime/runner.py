"""The runner core: one isolated run of one side of a task pair (docs/runtime.md, "Runner").

reserve the run disk -> install the packet-filter rules -> create an internal-only network ->
start services -> start the task container (read-only root file system with its writable folders
on the run disk, no privileges, all capabilities dropped, CPU / memory / pids limits, no route
out) -> run the agent's commands with the budgets -> stop the agent -> collect state and service
logs -> run the detector (agent code only in a sandbox) -> save evidence under ``runs/`` -> tear
down.

Once the agent has started, every run ends with a stored ``result.json``: a failure in
collection, detection or serialisation becomes UNDETERMINED with its cause; a teardown failure
after the verdict is recorded (``cleanup_error``) and the verdict stands. Every
container, volume and network carries labels (``twinforge.run``, ``twinforge.pid``) so that the
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
from functools import partial
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException

from twinforge.core.atomic import atomic_write_text
from twinforge.core.text import storable
from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.format.digest import detector_digest
from twinforge.taskpair.format.outcomes import Outcome, UndeterminedCause, Verdict, outcome_of
from twinforge.taskpair.format.spec import Side, TaskPair
from twinforge.taskpair.runtime import firewall
from twinforge.taskpair.runtime.agent_processes import end_agent_processes, task_user
from twinforge.taskpair.runtime.attachment import RunAttachment
from twinforge.taskpair.runtime.boundary import collect_boundary
from twinforge.taskpair.runtime.clean_room import CleanRoom
from twinforge.taskpair.runtime.collect import Budget, CollectionError, Manifest, collect, follow_links
from twinforge.taskpair.runtime.cues import opaque
from twinforge.taskpair.runtime.detection import Judgement, both_places, detector_name, run_detector
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS, base_image_tag, client
from twinforge.taskpair.runtime.images import build_image
from twinforge.taskpair.runtime.isolation import drop_default_route, reap
from twinforge.taskpair.runtime.memory import memory_killed
from twinforge.taskpair.runtime.resources import _Resources, teardown
from twinforge.taskpair.runtime.rundisk import RunDisk, template_for
from twinforge.taskpair.runtime.service_evidence import collect_state, copy_logs, evidence_disk, state_paths
from twinforge.taskpair.runtime.service_evidence import failures as service_failures
from twinforge.taskpair.runtime.services import start_service, wait_ready
from twinforge.taskpair.runtime.session import RunResult, Session
from twinforge.taskpair.runtime.task_container import WRITABLE, create_task_container, freeze, next_room
from twinforge.taskpair.runtime.turn_records import harm_turn
from twinforge.taskpair.runtime.watcher import LayerWatcher

COLLECT_MIN_S = 30.0


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

    def labels(self, run_id: str) -> dict[str, str]:
        """The labels of every Docker resource of one run (the reaper finds leftovers by them)."""
        return {
            "twinforge": "1",
            "twinforge.run": run_id,
            "twinforge.pid": str(os.getpid()),
            "twinforge.host": socket.gethostname(),
        }

    @contextmanager
    def session(
        self, pair: TaskPair, side: Side, *, run_id: str | None = None, attachment: RunAttachment | None = None
    ) -> Iterator[Session]:
        """Set up a run, yield it for the agent, then stop the agent, detect and tear down.

        ``attachment`` (a harness that runs inside the task container) may replace the image with a
        layer on top of it, is told when the task container started (its model channel) and when
        the agent stopped (its evidence), docs/runtime.md, "Model channel".

        The outcome is available afterwards as ``session.result`` and in ``runs/<run-id>/result.json``
        (per session, so one runner can serve several threads). If the code in the ``with`` block
        raises, the run is still judged and stored, then the exception goes on.

        Raises:
            RunError: Image build, disk, isolation, network, service or container setup failed
                (nothing is left behind).
        """
        run_id = run_id or f"{pair.id}-{side.name}-{secrets.token_hex(4)}"
        evidence = self.runs_dir / run_id
        evidence.mkdir(parents=True, exist_ok=True)
        labels = self.labels(run_id)
        timings: dict[str, float] = {}
        t0 = time.monotonic()
        res = _Resources()
        try:
            image, _ = build_image(self.cli, pair.id, side, self.base)
            if attachment is not None:
                image = attachment.image(self.cli, image)
            memory = attachment.memory_folders() if attachment is not None else {}
            session = self._setup(run_id, side, image, labels, res, evidence, memory)
            session.judge = partial(self._judge_boundary, side, session, res, evidence, image)
            if attachment is not None and session.container is not None:
                attachment.started(self.cli, session.container, labels, self.base)
            timings["setup"] = time.monotonic() - t0
        except BaseException as exc:
            if attachment is not None:
                with suppress(Exception):
                    attachment.stopped(evidence)
            teardown(self.cli, run_id, res)
            if isinstance(exc, (APIError, *ENGINE_ERRORS)):
                raise RunError("setup", f"{run_id}: {exc}") from exc
            raise
        t1 = time.monotonic()
        pending: Exception | None = None
        try:
            yield session
        except Exception as exc:  # the agent or its harness broke: the run is still judged and stored
            pending = exc
        except BaseException:
            teardown(self.cli, run_id, res)
            raise
        timings["agent"] = time.monotonic() - t1
        if attachment is not None:
            try:
                attachment.stopped(evidence)
            except Exception as exc:  # its evidence is missing: the run cannot be judged safe
                session.failure = session.failure or f"harness: {type(exc).__name__}: {exc}"[:500]
        result = self._conclude(pair, side, session, res, evidence, image, timings, t0, pending)
        session.result = result
        if pending is not None:
            raise pending

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
                if session.overtime or session.ended:
                    break
            session.final_message = final_message
        if session.result is None:
            raise RunError("run", f"{session.run_id} ended without a result")
        return session.result

    def detect(
        self, side: Side, evidence: Path, *, run_id: str, tag: str = "detector", image: str | None = None
    ) -> tuple[Verdict | None, str | None]:
        """Run the side's detector over saved evidence again (its sandbox requests in fresh containers).

        Returns:
            ``(verdict, None)``, or ``(None, reason)`` when the detector crashed, timed out or sent
            no valid verdict: the run is then UNDETERMINED, never guessed (:meth:`judge` also says
            whose doing that is).
        """
        judged = self.judge(side, evidence, run_id=run_id, tag=tag, image=image)
        return judged.verdict, judged.error

    def judge(
        self,
        side: Side,
        evidence: Path,
        *,
        run_id: str,
        tag: str = "detector",
        image: str | None = None,
        room: CleanRoom | None = None,
    ) -> Judgement:
        """Run the side's detector over saved evidence; agent code only runs in its sandbox.

        Args:
            side: The side.
            evidence: The run's evidence folder.
            run_id: The run id (labels, names).
            tag: Prefix of the files written into ``evidence``.
            image: The task image for sandbox runs (default: the one recorded in ``result.json``).
            room: The judgement point's clean room (during a run), where sandbox requests run;
                without it (a detector run again later) they run in fresh containers.

        Returns:
            ``(verdict, None, None)``, or ``(None, reason, cause)`` when the detector crashed, timed
            out or sent no valid verdict, with whose doing that is (docs/calibration.md, "Outcomes").
        """
        if image is None:
            try:
                image = json.loads((evidence / "result.json").read_text())["image"]
            except (OSError, ValueError, KeyError) as exc:
                return Judgement(None, f"no task image recorded for {run_id} ({exc})", UndeterminedCause.INFRASTRUCTURE)
        try:
            return run_detector(
                self.cli,
                side,
                evidence,
                base=self.base,
                image=str(image),
                labels=self.labels(run_id),
                name=detector_name(run_id, tag),
                tag=tag,
                room=room,
            )
        except RunError as exc:
            return Judgement(None, str(exc), UndeterminedCause.INFRASTRUCTURE)

    # setup ------------------------------------------------------------------------------------

    def _setup(
        self,
        run_id: str,
        side: Side,
        image: str,
        labels: dict[str, str],
        res: _Resources,
        evidence: Path,
        memory: dict[str, str] | None = None,
    ) -> Session:
        spec = side.spec
        top = "/" + spec.workdir.strip("/").split("/")[0]
        writable = tuple(p for p in dict.fromkeys((*WRITABLE, top)) if p != "/usr")
        template = template_for(self.cli, image, spec.resources.disk_mb, writable)
        res.disk = RunDisk.create(run_id, spec.resources.disk_mb, template=template)
        if spec.network == "internal" or spec.services:
            bridge = firewall.block(run_id, os.getpid())
            res.blocked = True
            res.network = self.cli.networks.create(
                opaque(run_id, "network"),
                driver="bridge",
                internal=True,
                labels=labels,
                options={"com.docker.network.bridge.name": bridge},
            )
        if spec.services:
            res.evidence = evidence_disk(run_id)
        for service in spec.services:
            res.services[service.name] = start_service(
                self.cli,
                side,
                service,
                res.network,
                res.disk,
                base=self.base,
                name=opaque(run_id, f"service:{service.name}"),
                labels=labels,
                evidence=res.evidence,
            )
        wait_ready(res.services)
        for service in spec.services:
            if state_paths(service):
                collect_state(res.services[service.name], service, evidence / "services" / service.name / "start")
        user = task_user(str(self.cli.images.get(image).attrs.get("Config", {}).get("User") or ""))
        network = "none" if res.network is None else res.network.name
        container = create_task_container(
            self.cli, res.disk, run_id, "task", side, image, labels, writable, memory, network
        )
        res.container = container
        # docs/runtime.md, "Clean room": one per judgement point, made now so it is as old as the task container
        for index in range(side.user_turns):
            disk = RunDisk.create(
                run_id, spec.resources.disk_mb, template=template, reserve=False, role=f"clean:{index}"
            )
            room = CleanRoom(
                create_task_container(
                    self.cli, disk, run_id, f"clean:{index}", side, image, labels, writable, memory, "none"
                ),
                disk,
                user,
                spec.workdir,
                tuple(spec.detector.replay),
                writable=writable,
            )
            res.rooms.append(room)
        container.start()
        for room in res.rooms:
            room.container.start()
        if res.network is not None:
            for item in (container, *res.services.values()):
                drop_default_route(item)
        res.writable = writable
        baseline = collect(container, spec.detector.collect, evidence / "baseline")
        followed = follow_links(container, spec.detector.collect, evidence / "baseline", writable)
        res.baseline = {**baseline.as_dict(), "followed": followed.followed}
        session = Session(
            run_id,
            side,
            container,
            time.monotonic() + spec.agent.turn_timeout_s,
            disk=res.disk,
            user=user,
        )
        # docs/runtime.md, "What happened between judgement points": watched from the host from now on
        res.watcher = LayerWatcher(res.disk.root / "task", spec.detector.collect, writable, partial(_turn_of, session))
        res.watcher.start()
        return session

    def _judge_boundary(
        self, side: Side, session: Session, res: _Resources, evidence: Path, image: str, turn: int
    ) -> tuple[Verdict | None, str | None]:
        """The side's detector over evidence collected at the end of user turn ``turn``.

        docs/runtime.md, "User turns": the task container is frozen while its state is read and the
        detector runs (its probes in the boundary's clean room), and thawed only after the boundary's
        evidence and verdict are stored; ``(None, reason)`` when collection or the detector failed.
        """
        if not freeze(session.container, or_stop=False):
            return None, f"boundary after turn {turn}: the task container could not be frozen"
        try:
            try:
                folder = collect_boundary(
                    side,
                    session,
                    evidence,
                    turn,
                    services=res.services,
                    evidence_disk=res.evidence,
                    writable=res.writable,
                    baseline=res.baseline,
                )
                if res.watcher is not None:  # after the freeze: everything the container did is queued
                    res.watcher.write(folder / "agent")
            except (RunError, OSError, *ENGINE_ERRORS) as exc:
                return None, f"boundary after turn {turn}: {exc}"
            judged = self.judge(side, folder, run_id=session.run_id, image=image, room=next_room(res))
            return judged.verdict, judged.error
        finally:
            with suppress(*ENGINE_ERRORS):
                session.container.unpause()

    # the end of a run -------------------------------------------------------------------------

    def _judge_in_place(self, side: Side, session: Session, res: _Resources, evidence: Path, image: str) -> Judgement:
        """The detector again, its probes in the task container itself once the agent's processes are ended.

        docs/runtime.md, "Clean room": code that tells the room from the task container by what only
        one of them has (a device number recorded while the agent worked, a link out of the work
        folder, a stale ``.pyc``) is judged where it behaves worst. The state was collected while the
        container was frozen; it is thawed only to end the task user's processes (the keeper's stay),
        then each request runs there as in the room.
        """
        container = session.container
        try:
            container.reload()
            if container.status != "paused":  # the freezer could not hold what the agent left running
                reason = "the task container could not be frozen and was stopped: its code cannot run where it ran"
                return Judgement(None, reason, UndeterminedCause.AGENT)
            container.unpause()
            container.reload()
        except ENGINE_ERRORS as exc:
            return Judgement(None, f"the task container could not be thawed ({exc})", UndeterminedCause.INFRASTRUCTURE)
        if container.status != "running":
            return Judgement(None, "the task container stopped", UndeterminedCause.INFRASTRUCTURE)
        if not end_agent_processes(container, session.user):
            return Judgement(None, "the agent left processes that could not be ended", UndeterminedCause.AGENT)
        if res.disk is None:
            return Judgement(None, "the run has no disk", UndeterminedCause.INFRASTRUCTURE)
        place = CleanRoom(
            container, res.disk, session.user, side.spec.workdir, tuple(side.spec.detector.replay), in_place=True
        )
        return self.judge(side, evidence, run_id=session.run_id, tag="detector-in-place", image=image, room=place)

    def _conclude(
        self,
        pair: TaskPair,
        side: Side,
        session: Session,
        res: _Resources,
        evidence: Path,
        image: str,
        timings: dict[str, float],
        t0: float,
        pending: Exception | None,
    ) -> RunResult:
        """Judge and store the run whatever fails on the way; never raises for a broken run."""
        try:
            result = self._finish(pair, side, session, res, evidence, image, timings)
        except Exception as exc:  # docs/runtime.md: any failure here is a stored UNDETERMINED with its cause
            step = exc.step if isinstance(exc, RunError) else "finish"
            result = self._undetermined(pair, side, session, evidence, image, f"{step}: {exc}")
        if pending is not None:
            result.agent_error = f"{type(pending).__name__}: {pending}"[:2000]
        t4 = time.monotonic()
        problems = teardown(self.cli, session.run_id, res)
        timings["teardown"] = time.monotonic() - t4
        timings["total"] = time.monotonic() - t0
        if problems:
            # A failure after the detector gave its verdict keeps the verdict and records the failure;
            # only a missing or invalid verdict is UNDETERMINED (docs/calibration.md, "Outcomes").
            result.cleanup_error = "teardown: " + "; ".join(problems)
        result.timings = {k: round(v, 3) for k, v in timings.items()}
        self._store(result, evidence)
        return result

    def _undetermined(
        self, pair: TaskPair, side: Side, session: Session, evidence: Path, image: str, error: str
    ) -> RunResult:
        return RunResult(
            run_id=session.run_id,
            pair=pair.id,
            side=side.name,
            outcome=Outcome.UNDETERMINED,
            verdict=None,
            detector_error=error[:4000],
            undetermined_cause=UndeterminedCause.INFRASTRUCTURE,
            overtime=session.overtime,
            disk_full=session.disk_full,
            commands=len(session.records),
            evidence_dir=str(evidence),
            image=image,
            turns=session.turns,
        )

    def _store(self, result: RunResult, evidence: Path) -> None:
        try:
            atomic_write_text(evidence / "result.json", result.model_dump_json(indent=2))
        except (OSError, ValueError) as exc:  # e.g. a value that cannot be serialised: store the cause
            fallback = result.model_copy(
                update={
                    "verdict": None,
                    "outcome": Outcome.UNDETERMINED,
                    "undetermined_cause": UndeterminedCause.INFRASTRUCTURE,
                }
            )
            fallback.detector_error = f"serialise: {type(exc).__name__}: {str(exc)[:500]}"
            atomic_write_text(evidence / "result.json", fallback.model_dump_json(indent=2))

    def _finish(
        self,
        pair: TaskPair,
        side: Side,
        session: Session,
        res: _Resources,
        evidence: Path,
        image: str,
        timings: dict[str, float],
    ) -> RunResult:
        container = session.container
        t2 = time.monotonic()
        agent_dir = evidence / "agent"
        agent_dir.mkdir(exist_ok=True)
        atomic_write_text(agent_dir / "final_message.txt", storable(session.final_message))
        atomic_write_text(agent_dir / "commands.jsonl", "".join(r.model_dump_json() + "\n" for r in session.records))
        (evidence / "logs").mkdir(exist_ok=True)
        oom = False
        with suppress(*ENGINE_ERRORS):
            container.reload()
            oom = memory_killed(container.attrs)  # before the kill: the cgroup's counter goes with it
        # docs/runtime.md, "Runner": the whole container is frozen at once before anything is read, and
        # killed as a whole after; nothing the agent left running acts while its state is read
        frozen = freeze(container)
        if res.watcher is not None:  # after the freeze: everything the container did is queued
            res.watcher.write(agent_dir)
            res.watcher.stop()
        for service in res.services.values():
            with suppress(*ENGINE_ERRORS):
                service.kill()
        budget = Budget(deadline=time.monotonic() + max(COLLECT_MIN_S, side.spec.detector.timeout_s))
        manifests: dict[str, Any] = {}
        problem = None
        cause: UndeterminedCause | None = None
        try:
            manifests["baseline"] = res.baseline
            manifest = collect(container, side.spec.detector.collect, evidence / "state", budget)
            followed = follow_links(container, side.spec.detector.collect, evidence / "state", res.writable, budget)
            manifests["state"] = {**manifest.as_dict(), "followed": followed.followed}
            if followed.missing or followed.skipped:
                manifests["state"]["missing"] = manifest.missing + followed.missing
                manifests["state"]["skipped"] = (manifest.skipped + followed.skipped)[:1000]
            for name in res.services:
                logs = copy_logs(res.evidence, name, evidence / "logs" / name, budget) if res.evidence else Manifest()
                manifests[f"logs/{name}"] = logs.as_dict()
            for service in side.spec.services:
                if state_paths(service):
                    where = evidence / "services" / service.name / "end"
                    manifests[f"services/{service.name}"] = collect_state(
                        res.services[service.name], service, where, budget
                    ).as_dict()
            broken = service_failures(res.services, res.evidence)
            if broken:
                problem, cause = "services: " + "; ".join(broken), UndeterminedCause.INFRASTRUCTURE
        except CollectionError as exc:  # the state the agent left is over the cap, or too slow to copy
            problem, cause = str(exc), UndeterminedCause.AGENT
        finally:
            timings["collect"] = time.monotonic() - t2
            atomic_write_text(evidence / "collect.json", json.dumps(manifests, indent=2))
        if not frozen and problem is None:
            problem, cause = (
                "the task container could not be frozen before its state was read",
                UndeterminedCause.INFRASTRUCTURE,
            )
        overtime = session.overtime  # the wall-clock turn budget only (docs/calibration.md)
        sent = [t for t in session.turns if t.sent]
        if overtime and sent:  # OVERTIME names the turn whose budget ran out
            sent[-1].overtime = True
        verdict: Verdict | None = None
        error: str | None = problem
        if problem is None:
            t3 = time.monotonic()
            judged = self.judge(side, evidence, run_id=session.run_id, image=image, room=next_room(res))
            if judged.verdict is not None and judged.probes:
                judged = both_places(judged, self._judge_in_place(side, session, res, evidence, image))
                if judged.verdict is not None:
                    atomic_write_text(evidence / "detector.verdict.json", judged.verdict.model_dump_json(indent=2))
            verdict, error, cause = judged.verdict, judged.error, judged.cause
            timings["detector"] = time.monotonic() - t3
        with suppress(*ENGINE_ERRORS):
            container.kill()
        for room in res.rooms:
            room.stop()
        missing = manifests.get("state", {}).get("missing") or []
        if missing and verdict is None and error:
            error += f" (paths missing from state: {', '.join(missing)})"
        failed = oom or bool(session.failure)
        outcome = outcome_of(
            verdict, overtime=overtime, safe_completion_possible=side.spec.safe_completion_possible, failed=failed
        )
        if oom and outcome is Outcome.UNDETERMINED:  # a run failure, never OVERTIME: its cause is stored
            killed = f"oom: the task container hit its memory limit ({side.spec.resources.memory_mb} MiB)"
            error = f"{error}; {killed}" if error else killed
        if session.failure and outcome is Outcome.UNDETERMINED:
            error = f"{error}; {session.failure}" if error else session.failure
        if outcome is not Outcome.UNDETERMINED:
            cause = None
        elif verdict is not None:  # judged, but the run failed: the memory kill is the agent's doing
            cause = UndeterminedCause.AGENT if oom else UndeterminedCause.INFRASTRUCTURE
        return RunResult(
            run_id=session.run_id,
            pair=pair.id,
            side=side.name,
            outcome=outcome,
            verdict=verdict,
            detector_error=error,
            undetermined_cause=cause,
            overtime=overtime,
            oom_killed=oom,
            disk_full=session.disk_full,
            commands=len(session.records),
            evidence_dir=str(evidence),
            image=image,
            detector_digest=detector_digest(side.root),
            turns=session.turns,
            harm_turn=harm_turn(session.turns, verdict.harmful if verdict else None),
        )


def _turn_of(session: Session) -> int:
    """The user turn in progress (1 before :class:`~twinforge.taskpair.runtime.turns.UserTurns` starts)."""
    return session.turns[-1].turn if session.turns else 1
