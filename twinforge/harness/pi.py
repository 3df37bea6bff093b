"""Pi 0.84.2 headless (docs/runtime.md, "Harnesses"): Chat Completions or Responses on Node 22.

Its OpenAI provider speaks ``openai-completions`` or, for OpenAI's own models
(:attr:`ModelEndpoint.api`), ``openai-responses``, which keeps a reasoning model's state.

``pi --print --mode json``, with a provider in ``$PI_CODING_AGENT_DIR/models.json`` whose API key is
``"$TF_TOKEN"`` (a bare name would be a literal key), and ``PI_OFFLINE=1``, no version check, no
telemetry. It stops at once on 401. It exits 0 even when the API failed: the last assistant
message's ``stopReason`` (``stop`` / ``error``) in ``agent_end`` tells.

Sessions: ``--session-id <id>`` ("use exact project session ID, creating it if missing", 0.84.2's
``--help``) names the run's session on every turn, so a later user turn continues it; Pi keeps it
under ``--session-dir``, which is the session store (a tmpfs).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from twinforge.harness.cli_harness import HOME, CliHarness, EndState, Launch
from twinforge.harness.layer import entry_in_layer
from twinforge.harness.protocol import ModelEndpoint
from twinforge.harness.shapes import Shape
from twinforge.taskpair.in_container import PI_COMMAND_TIMEOUT


class Pi(CliHarness):
    """Pi in print mode; permission mode ``bypass`` (Pi has no approvals: its tools always run)."""

    name = "pi"
    shape = "chat"
    refusal_status = 401
    session_store = (f"{HOME}/.pi/sessions",)

    def api_shape(self, endpoint: ModelEndpoint) -> Shape:
        """``responses`` where the model block chooses it (:meth:`ModelSettings.harness_api`), else ``chat``."""
        return "responses" if endpoint.api == "responses" else "chat"

    def launch(
        self,
        endpoint: ModelEndpoint,
        base_url: str,
        instruction: str,
        workdir: str,
        command_timeout_s: float,
        resume: str | None = None,
    ) -> Launch:
        """``models.json``, ``settings.json``, environment and command line of one run.

        Pi's bash tool has no default timeout and no setting for one: an extension in its agent
        folder (loaded from there at start) sets the command budget as the timeout and caps a larger
        one the model asks for.
        """
        model = endpoint.model
        agent_dir = f"{HOME}/.pi/agent"
        responses = self.api_shape(endpoint) == "responses"
        provider: dict[str, Any] = {
            "baseUrl": f"{base_url}/v1",
            "api": "openai-responses" if responses else "openai-completions",
            "apiKey": "$TF_TOKEN",
            "models": [
                {
                    "id": model,
                    "name": model,
                    "reasoning": endpoint.reasoning,
                    "contextWindow": 128000,
                    "maxTokens": 8192,
                }
            ],
        }
        if not responses:
            provider["compat"] = {"supportsDeveloperRole": False, "supportsReasoningEffort": endpoint.reasoning}
        models = {"providers": {"tf": provider}}
        settings = {"enableInstallTelemetry": False, "enableAnalytics": False, "quietStartup": True}
        files = {
            f"{agent_dir}/models.json": json.dumps(models),
            f"{agent_dir}/settings.json": json.dumps(settings),
            f"{agent_dir}/extensions/command-timeout.ts": PI_COMMAND_TIMEOUT.read_text(encoding="utf-8").replace(
                "__LIMIT_S__", f"{command_timeout_s:g}"
            ),
        }
        env = {
            "HOME": HOME,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "TERM": "dumb",
            "PI_CODING_AGENT_DIR": agent_dir,
            "TF_TOKEN": endpoint.token,
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }
        argv = [*entry_in_layer(self.package), "--print", "--mode", "json", "--provider", "tf", "--model", model]
        session = resume or self.session_ref or str(uuid.uuid4())
        argv += ["--session-dir", f"{HOME}/.pi/sessions", "--session-id", session, instruction]
        return Launch(argv, env, files=files)

    def session_of(self, events: list[dict[str, Any]]) -> str | None:
        """The id the run's session was started with (Pi's session header echoes it)."""
        header = next((e for e in events if e.get("type") == "session" and e.get("id")), None)
        return str(header["id"]) if header else (self.session_ref or None)

    def end_state(self, events: list[dict[str, Any]], exit_code: int) -> EndState:
        """The last assistant message of ``agent_end``: its ``stopReason`` and text."""
        end = next((e for e in reversed(events) if e.get("type") == "agent_end"), None)
        messages = [
            m for m in (end or {}).get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant"
        ]
        if not messages:
            return EndState(f"exited {exit_code} without agent_end", "", api_error=True)
        last = messages[-1]
        text = "".join(
            str(c.get("text", "")) for c in last.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"
        )
        reason = str(last.get("stopReason") or "")
        if reason == "error":
            return EndState(f"error {last.get('errorMessage', '')}"[:200], text, api_error=True)
        return EndState(f"stopReason {reason}", text)
