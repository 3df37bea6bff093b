"""Codex CLI 0.146.0 headless (docs/runtime.md, "Harnesses"): OpenAI Responses through the model channel.

``codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check``, with a custom
provider (``wire_api = "responses"``, no WebSockets; never the built-in ``openai`` one) in
``$CODEX_HOME/config.toml``. ``[features] plugins = false`` stops its plugin sync (a ``git ls-remote``
of a public repository, then two web APIs), ``[analytics]`` and ``[feedback]`` are off, no update
check, hosted web search off. It stops at once on 429 (and retries 401 six times, 500 thirty), so
its refusal status is 429. ``turn.completed`` against ``turn.failed`` tells how it ended.

Sessions: ``codex exec`` reports its thread in ``thread.started`` (``thread_id``); a later user turn
runs ``codex exec resume <thread_id>`` with the same options. Codex keeps the rollout under
``$CODEX_HOME/sessions`` and its thread index in SQLite under ``sqlite_home`` (0.146.0's
``exec resume --help`` and config schema): both are the session store (tmpfs mounts).
"""

from __future__ import annotations

from typing import Any

import tomli_w

from twinforge.harness.cli_harness import HOME, CliHarness, EndState, Launch
from twinforge.harness.layer import entry_in_layer
from twinforge.harness.protocol import ModelEndpoint


class Codex(CliHarness):
    """Codex ``exec``; permission modes ``bypass`` (the study's) and ``workspace-write`` (its sandbox, asks never)."""

    name = "codex"
    shape = "responses"
    refusal_status = 429
    permissions = ("bypass", "workspace-write")
    session_store = (f"{HOME}/.codex/sessions", f"{HOME}/.codex/state")

    def launch(
        self,
        endpoint: ModelEndpoint,
        base_url: str,
        instruction: str,
        workdir: str,
        command_timeout_s: float,
        resume: str | None = None,
    ) -> Launch:
        """``config.toml``, environment and command line of one run.

        Codex runs each command in a session and its ``exec_command`` returns after at most 30 s
        (``yield_time_ms``, capped by Codex itself); ``background_terminal_max_timeout`` holds a poll
        of a still-running session (``write_stdin``, up to 300 s by default) to the command budget.
        """
        config: dict[str, Any] = {
            "model": endpoint.model,
            "model_provider": "tf",
            "approval_policy": "never",
            "sandbox_mode": "danger-full-access" if self.permission == "bypass" else "workspace-write",
            "check_for_update_on_startup": False,
            "background_terminal_max_timeout": round(command_timeout_s * 1000),
            "web_search": "disabled",
            "sqlite_home": f"{HOME}/.codex/state",
            "model_providers": {
                "tf": {
                    "name": "model proxy",
                    "base_url": f"{base_url}/v1",
                    "env_key": "TF_TOKEN",
                    "wire_api": "responses",
                    "supports_websockets": False,
                    "stream_idle_timeout_ms": 300000,
                    "request_max_retries": 0,
                }
            },
            "features": {"plugins": False, "remote_plugin": False, "apps": False, "in_app_updates": False},
            "analytics": {"enabled": False},
            "feedback": {"enabled": False},
            "otel": {"exporter": "none", "log_user_prompt": False},
        }
        env = {
            "HOME": HOME,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "TERM": "dumb",
            "CODEX_HOME": f"{HOME}/.codex",
            "TF_TOKEN": endpoint.token,
        }
        argv = [*entry_in_layer(self.package), "exec", *(["resume"] if resume else [])]
        argv += ["--json", "--skip-git-repo-check", "--model", endpoint.model]
        if self.permission == "bypass":
            argv.append("--dangerously-bypass-approvals-and-sandbox")
        argv += ["--", *([resume] if resume else []), instruction]
        return Launch(argv, env, files={f"{HOME}/.codex/config.toml": tomli_w.dumps(config)})

    def session_of(self, events: list[dict[str, Any]]) -> str | None:
        """``thread_id`` of the ``thread.started`` event."""
        started = (e for e in events if e.get("type") == "thread.started" and e.get("thread_id"))
        return next((str(e["thread_id"]) for e in started), None)

    def end_state(self, events: list[dict[str, Any]], exit_code: int) -> EndState:
        """``turn.completed`` is success; ``turn.failed`` or ``error`` events are an API failure."""
        final = ""
        for event in events:
            item = event.get("item")
            if event.get("type") == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
                final = str(item.get("text") or "")
        kinds = [e.get("type") for e in events]
        if "turn.completed" in kinds and "turn.failed" not in kinds:
            return EndState("turn.completed", final)
        error = next(
            (str(e.get("message") or e.get("error")) for e in reversed(events) if e.get("type") == "error"), ""
        )
        return EndState(f"turn.failed {error}"[:200] if "turn.failed" in kinds else f"exited {exit_code}", final, True)
