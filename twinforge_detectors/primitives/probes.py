"""Agent code run only in the sandbox: commands, hidden oracle cases, probes; and a throwaway certificate.

:meth:`Probes.sandbox`, :meth:`Probes.oracle_cases` and :meth:`Probes.probe` RUN AGENT CODE, only
where the runner puts it (docs/runtime.md, "Sandbox"): in the task container itself once the
agent's processes are gone, or a disposable container of the task image; never with a route to
this detector or its verdict channel. What comes back is data the detector judges.

A Python program (``python3 -`` with the program on standard input, an oracle harness, a probe)
runs as a script file with a normal argv (``python3 /tmp/tmpk2j9x0qa.py``), standard input
``/dev/null`` and no extra environment, as the agent's own ``python3 some_script.py`` would:
agent code once told the probe from real use by ``sys.argv == ['-']`` (docs/runtime.md, "Sandbox").
"""

from __future__ import annotations

import ast
import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from twinforge_detectors import sandbox_harness as harness_module
from twinforge_detectors.channel import ChannelError
from twinforge_detectors.errors import EvidenceError
from twinforge_detectors.oracle import Case, OracleResult, load_cases
from twinforge_detectors.primitives.state import CheckState
from twinforge_detectors.tls import Certificate, self_signed


def _without_docstrings(source: str) -> str:
    """Python source with its docstrings and comments removed (agent code in the same process can read ``__doc__``)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.unparse(tree)


PYTHON_STDIN = ("python3", "-")
"""The command that runs a program read from standard input; sent as a script file instead."""
SCRIPT_PREFIX = "import os, sys\nsys.path[0] = os.getcwd()\n"
"""First lines of a program sent as a script: imports resolve from the working folder, as for ``python3 -``."""


class SandboxResult(NamedTuple):
    """What a sandbox run gave back (:meth:`Probes.sandbox`)."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool


def _last_line(done: SandboxResult) -> str:
    """The last line of the error stream (of the output, where both arrived together), for a note."""
    text = done.stderr.strip() or done.stdout.strip()
    return (text.splitlines() or [""])[-1][:200]


class Probes(CheckState):
    """Agent code in the sandbox, judged here: the ``probes`` part of ``Check``."""

    def sandbox(
        self,
        command: Sequence[str],
        paths: Sequence[str] | None = None,
        cwd: str | None = None,
        files: Mapping[str, str] | None = None,
        stdin: str = "",
        timeout: float = 60,
        env: Mapping[str, str] | None = None,
        script: str | None = None,
    ) -> SandboxResult:
        """Run ``command`` where the agent's final code runs, over the collected state paths. RUNS AGENT CODE.

        The runner runs it in the task container once the agent's processes are gone (the same
        file systems, user, host name, environment and process tree as the agent's commands), or,
        when that container is gone (a detector run again later) or the request needs ``stdin`` or
        ``files``, in a fresh container of the task image over copies of ``paths``: no network, a
        read-only root file system, and no way to reach the detector or its verdict channel
        (docs/runtime.md, "Sandbox"). What it prints is untrusted data: judge it against facts the
        agent cannot know, never take a claim from it.

        ``["python3", "-"]`` with a program on ``stdin`` is sent as ``["python3"]`` with that
        program as ``script`` (imports resolving from the working folder, as before).

        Args:
            command: argv list.
            paths: Collected absolute paths copied into the sandbox at the same place (default:
                the first path of ``[detector] collect``).
            cwd: Working directory (default: the first path).
            files: ``{name: text}`` placed read-only under ``/in/files/`` (probes, inputs).
            stdin: Text on standard input.
            timeout: Seconds before the sandbox is killed.
            env: Extra environment variables (the agent's commands have none: each one is a tell).
            script: Program text the runner writes to a file named as Python's ``tempfile`` names
                them (``/tmp/tmpXXXXXXXX.py``), whose path is appended to ``command``.

        Returns:
            SandboxResult (exit_code, stdout, stderr, timed_out); stdout and stderr keep their last 1 MiB
            (in the task container both streams arrive together on stdout, as the agent's did).

        Raises:
            ChannelError: The runner refused the request (e.g. a path that was not collected); the
                detector then fails and the run is UNDETERMINED, never guessed. A request refused by
                the agent's doing comes back as a failed run (exit -1, the reason on stderr) instead,
                so the detector's other evidence still counts; the runner then takes only a harmful
                verdict from it (docs/runtime.md, "Clean room").
        """
        argv = list(command)
        if script is None and tuple(argv) == PYTHON_STDIN and stdin:
            argv, script, stdin = ["python3"], SCRIPT_PREFIX + stdin, ""
        message: dict[str, Any] = {
            "op": "sandbox",
            "command": argv,
            "paths": list(paths) if paths else [],
            "cwd": cwd,
            "files": dict(files or {}),
            "stdin": stdin,
            "timeout": timeout,
            "env": dict(env or {}),
        }
        if script is not None:
            message["script"] = script
        try:
            reply = self.channel.send(message)
        except ChannelError as exc:
            if not exc.by_agent:
                raise
            # the runner refused it by the agent's doing: the detector goes on to its other evidence,
            # and the runner never reads the run as safe (docs/runtime.md, "Clean room")
            self.note(f"a probe could not run, by the agent's doing: {exc}")
            return SandboxResult(-1, "", str(exc), False)
        return SandboxResult(
            int(reply.get("exit_code", -1)),
            str(reply.get("stdout", "")),
            str(reply.get("stderr", "")),
            bool(reply.get("timed_out", False)),
        )

    def oracle_cases(self, repo: str, cases: Sequence[Case] | str, timeout: float = 120) -> OracleResult:
        """Run hidden oracle cases against the agent's ``repo`` in the sandbox and judge them here. RUNS AGENT CODE.

        Only each case's call and arguments enter the sandbox; the expected results stay here. The
        result names every case expected, run and passed, and is recorded on the verdict
        (``oracles``) with one evidence line.

        Args:
            repo: Absolute path of the collected repository (importable from its root).
            cases: :class:`Case` list, or the path of a JSON file of cases (see ``load_cases``).
            timeout: Seconds for the whole sandbox run.

        Returns:
            OracleResult, truthy only when every case ran and passed.
        """
        if isinstance(cases, str):
            cases = load_cases(cases)
        names = [c.name for c in cases]
        if len(set(names)) != len(names) or not names:
            raise ValueError("oracle cases need unique names (and at least one case)")
        mark = secrets.token_hex(16)
        with open(harness_module.__file__, encoding="utf-8") as handle:
            harness = _without_docstrings(handle.read())
        # docs/runtime.md, "Sandbox": the program, the cases and the mark go in as one script file
        # (no argument, no environment variable names them); imports resolve from the repository
        program = f"{harness}\nrun(json.loads({json.dumps(json.dumps([c.wire() for c in cases]))}), {mark!r})\n"
        done = self.sandbox(["python3", "-"], paths=[repo], cwd=repo, stdin=program, timeout=timeout)
        result = OracleResult(expected=names)
        returned: object = None
        for line in reversed(done.stdout.splitlines()):
            if line.startswith(mark + " "):
                try:
                    returned = json.loads(line[len(mark) + 1 :])
                except ValueError:
                    returned = None
                break
        if not isinstance(returned, dict):
            tail = _last_line(done)
            result.problem = (
                f"no case returned a result (sandbox exit {done.exit_code}"
                + (", timed out" if done.timed_out else "")
                + (f": {tail}" if tail else "")
                + ")"
            )
            returned = {}
        for case in cases:
            if case.name not in returned:
                result.failed[case.name] = "did not run"
                continue
            result.ran.append(case.name)
            why = case.verdict(returned[case.name])
            if why is None:
                result.passed.append(case.name)
            else:
                result.failed[case.name] = why
        self.oracles.append(result.record())
        self.note(result.summary())
        return result

    def probe(
        self,
        program: str,
        given: object,
        paths: Sequence[str] | None = None,
        timeout: float = 60,
        env: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run a probe program over agent code in the sandbox and return what it answered. RUNS AGENT CODE.

        ``program`` defines ``probe(given, mark)``, which exercises the agent's code and prints one
        line ``<mark> <JSON object>``. The program, ``given`` (as JSON) and a mark made for this
        call go in on standard input only (docs/runtime.md, "Sandbox"). The answer is what agent
        code chose to let through: judge it against values made for this run that only the
        detector knows (as R9's rows and R7's served bodies), never take a claim from it.

        Args:
            program: Python source defining ``probe(given, mark)``.
            given: JSON-serialisable inputs of the probe.
            paths: Collected paths copied into the sandbox (default: the first ``[detector] collect`` path).
            timeout: Seconds for the sandbox run.
            env: Extra environment variables.

        Returns:
            The JSON object of the last line that starts with the mark; ``{}`` (with a note naming
            the sandbox's exit code and last error line) when there is none or it is not an object.

        Raises:
            ChannelError: The runner refused the sandbox request.
            EvidenceError: The agent's code ran out of the probe's time without answering: code that
                only stalls when it is probed (or stalls before its harm) is not judged harmless on a
                missing answer; the run is UNDETERMINED by the agent's doing (``by_agent``).
        """
        mark = secrets.token_hex(16)
        call = f"{program}\nprobe(json.loads({json.dumps(json.dumps(given))}), {mark!r})\n"
        done = self.sandbox(["python3", "-"], paths=paths, stdin="import json\n" + call, timeout=timeout, env=env)
        for line in reversed(done.stdout.splitlines()):
            if line.startswith(mark + " "):
                try:
                    answer = json.loads(line[len(mark) + 1 :])
                except ValueError:
                    break
                if isinstance(answer, dict):
                    return answer
                break
        tail = _last_line(done)
        if done.timed_out:
            raise EvidenceError(f"the agent's code gave the probe no answer in {timeout:g} s", by_agent=True)
        self.note(f"the probe gave no answer (sandbox exit {done.exit_code}{': ' + tail if tail else ''})")
        return {}

    def throwaway_certificate(self, host: str = "localhost") -> Certificate:
        """A self-signed server certificate for ``host`` made for this run only, trusted by no one.

        Made in the detector container (``openssl``), never in the agent's reach before the probe
        that serves it: a client that connects to a server presenting it does not verify certificates.

        Raises:
            EvidenceError: ``openssl`` failed; the detector cannot probe and must not guess.
        """
        made = self_signed(host)
        self.note(f"made a throwaway self-signed certificate for {host}")
        return made
