"""OpenCode 1.18.18 headless (docs/runtime.md, "Harnesses"): Chat Completions or Responses via the model channel.

``opencode run --format json``, with a provider through ``@ai-sdk/openai-compatible`` (Chat
Completions) or, for OpenAI's own models (:attr:`ModelEndpoint.api`), ``@ai-sdk/openai`` (Responses,
bundled in the CLI), in the file ``OPENCODE_CONFIG`` names. ``autoupdate: false``, ``share:
disabled`` and the ``OPENCODE_DISABLE_*`` switches turn off updates, sharing, the models catalogue
fetch and default plugins. No switch stops the background npm install of its plugin package at every
start: its config folder is pre-seeded with ``node_modules/``, a ``package.json`` and a matching
lock file, which makes it skip that install (harness-kit findings). A ``.opencode/`` folder of the
task repository (in the working folder or above it) would start the same install there; OpenCode
skips a folder it cannot write, so such a folder is unwritable while it runs
(:attr:`CliHarness.unwritable_folders`; its mode comes back after). The task is piped on standard
input (an argument with spaces reaches the model wrapped in quotes). It stops at once on 401. It has
no end event: the last ``step_finish`` with reason ``stop`` and no ``error`` event mean success.

Sessions: every event of ``run --format json`` carries ``sessionID``; a later user turn runs
``opencode run --session <id>``. OpenCode keeps sessions in its database under
``$XDG_DATA_HOME/opencode`` (1.18.18: ``opencode.db``), which is the session store (a tmpfs).
"""

from __future__ import annotations

import json
from typing import Any

from twinforge.harness.cli_harness import HOME, CliHarness, EndState, Launch
from twinforge.harness.layer import entry_in_layer
from twinforge.harness.protocol import ModelEndpoint
from twinforge.harness.shapes import Shape
from twinforge.taskpair.in_container import OPENCODE_COMMAND_TIMEOUT

OFFLINE = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_EMBEDDED_WEB_UI": "1",
    "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
}
"""OpenCode's own switches that keep it offline (with the pre-seeded config folder)."""


class OpenCode(CliHarness):
    """OpenCode ``run``; permission mode ``bypass`` (the study's: ``--dangerously-skip-permissions``)."""

    name = "opencode"
    shape = "chat"
    refusal_status = 401
    unwritable_folders = (".opencode",)
    session_store = (f"{HOME}/.local/share/opencode",)

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
        """``opencode.json``, the seeded config folder, environment and command line of one run.

        The command budget is OpenCode's default shell timeout
        (``OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS``), and a plugin in its config folder caps a
        larger ``timeout`` the model asks for (OpenCode itself has no maximum).
        """
        model = endpoint.model
        config = {
            "model": f"tf/{model}",
            "small_model": f"tf/{model}",
            "autoupdate": False,
            "share": "disabled",
            "provider": {
                "tf": {
                    "npm": "@ai-sdk/openai" if self.api_shape(endpoint) == "responses" else "@ai-sdk/openai-compatible",
                    "name": "model proxy",
                    "options": {"baseURL": f"{base_url}/v1", "apiKey": "{env:TF_TOKEN}"},
                    "models": {model: {"name": model, "tool_call": True, "limit": {"context": 128000, "output": 8192}}},
                }
            },
        }
        plugin = {"@opencode-ai/plugin": self.version}
        lock = {"name": "opencode", "lockfileVersion": 3, "requires": True, "packages": {"": {"dependencies": plugin}}}
        seed = f"{HOME}/.config/opencode"
        files = {
            f"{HOME}/.opencode.json": json.dumps(config),
            f"{seed}/package.json": json.dumps({"dependencies": plugin}),
            f"{seed}/package-lock.json": json.dumps(lock),
            f"{seed}/node_modules/.keep": "",
            f"{seed}/plugin/command-timeout.js": OPENCODE_COMMAND_TIMEOUT.read_text(encoding="utf-8").replace(
                "__LIMIT_MS__", str(round(command_timeout_s * 1000))
            ),
        }
        env = {
            "HOME": HOME,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "TERM": "dumb",
            "XDG_CONFIG_HOME": f"{HOME}/.config",
            "XDG_DATA_HOME": f"{HOME}/.local/share",
            "XDG_STATE_HOME": f"{HOME}/.local/state",
            "XDG_CACHE_HOME": f"{HOME}/.cache",
            "OPENCODE_CONFIG": f"{HOME}/.opencode.json",
            "OPENCODE_FAKE_VCS": "git",
            "TF_TOKEN": endpoint.token,
            "OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS": str(round(command_timeout_s * 1000)),
            **OFFLINE,
        }
        argv = [*entry_in_layer(self.package), "run", "--format", "json", "--model", f"tf/{model}"]
        argv.append("--dangerously-skip-permissions")
        if resume:
            argv += ["--session", resume]
        return Launch(argv, env, files=files, stdin_prompt=True)

    def session_of(self, events: list[dict[str, Any]]) -> str | None:
        """``sessionID`` of its events."""
        return next((str(e["sessionID"]) for e in events if e.get("sessionID")), None)

    def end_state(self, events: list[dict[str, Any]], exit_code: int) -> EndState:
        """The last ``step_finish`` reason and any ``error`` event."""
        final = ""
        for event in events:
            part = event.get("part")
            if event.get("type") == "text" and isinstance(part, dict):
                final = str(part.get("text") or "")
        errors = [e for e in events if e.get("type") == "error"]
        finish = next((e for e in reversed(events) if e.get("type") == "step_finish"), None)
        reason = str((finish or {}).get("part", {}).get("reason", "")) if finish else ""
        if errors or exit_code != 0:
            detail = json.dumps(errors[-1].get("error"))[:150] if errors else ""
            return EndState(f"error {detail}".strip() if errors else f"exited {exit_code}", final, True)
        return EndState(f"step_finish {reason}".strip(), final, api_error=reason != "stop")
