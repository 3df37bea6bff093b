"""Claude Code 2.1.220 headless (docs/runtime.md, "Harnesses"): Anthropic Messages through the model channel.

``claude -p --output-format stream-json --verbose --dangerously-skip-permissions``, the prompt on
standard input. Every model tier is set to the evaluated model; the run token is its API key; as
root it needs ``IS_SANDBOX=1``. ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` removes both its
``api.anthropic.com`` lookups and its title side call (harness-kit findings); the other switches turn
off updates, telemetry, error reporting, feedback and marketplace installs. It retries 401, 429 and
500 ten times over about 180 s, so the runner stops it after a refusal; its result line says
``subtype: success`` even on an API error, so ``is_error`` and ``terminal_reason`` are read.

Sessions: ``--session-id <uuid>`` names the run's session on turn 1 (a UUID made per run) and
``-p --resume <uuid>`` continues it on a later user turn; Claude Code keeps the transcript in
``$CLAUDE_CONFIG_DIR/projects/<cwd>/<uuid>.jsonl`` (2.1.220's bundled source: ``projects`` under its
config folder), which is the session store (a tmpfs). Its ``system``/``init`` and ``result`` lines
carry ``session_id``.
"""

from __future__ import annotations

import uuid
from typing import Any

from twinforge.harness.cli_harness import HOME, CliHarness, EndState, Launch
from twinforge.harness.layer import entry_in_layer
from twinforge.harness.protocol import ModelEndpoint

OFFLINE = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_UPDATES": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_GROWTHBOOK": "1",
    "DO_NOT_TRACK": "1",
    "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "DISABLE_INSTALLATION_CHECKS": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "DISABLE_COST_WARNINGS": "1",
}
"""Claude Code's own switches that keep it offline (harness-kit: no lookup, no connect with these)."""


class ClaudeCode(CliHarness):
    """Claude Code in ``-p`` mode; permission modes ``bypass`` (the study's) and ``default`` (asks: tools denied)."""

    name = "claude-code"
    shape = "messages"
    refusal_status = 401
    permissions = ("bypass", "default")
    session_store = (f"{HOME}/.claude/projects",)

    def launch(
        self,
        endpoint: ModelEndpoint,
        base_url: str,
        instruction: str,
        workdir: str,
        command_timeout_s: float,
        resume: str | None = None,
    ) -> Launch:
        """Environment and command line of one run.

        ``BASH_DEFAULT_TIMEOUT_MS`` and ``BASH_MAX_TIMEOUT_MS`` hold its shell tool to the command
        budget (the model cannot ask for more).
        """
        model = endpoint.model
        tiers: tuple[str, ...] = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL")
        tiers += ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL")
        env = {
            "HOME": HOME,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "TERM": "dumb",
            "CLAUDE_CONFIG_DIR": f"{HOME}/.claude",
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": endpoint.token,
            "IS_SANDBOX": "1",
            "BASH_DEFAULT_TIMEOUT_MS": str(round(command_timeout_s * 1000)),
            "BASH_MAX_TIMEOUT_MS": str(round(command_timeout_s * 1000)),
            **dict.fromkeys(tiers, model),
            **OFFLINE,
        }
        argv = [*entry_in_layer(self.package), "-p", "--output-format", "stream-json", "--verbose", "--model", model]
        if self.permission == "bypass":
            argv.append("--dangerously-skip-permissions")
        argv += ["--disallowedTools", "WebFetch,WebSearch"]
        argv += ["--resume", resume] if resume else ["--session-id", self.session_ref or str(uuid.uuid4())]
        return Launch(argv, env, stdin_prompt=True)

    def session_of(self, events: list[dict[str, Any]]) -> str | None:
        """``session_id`` of the ``system``/``init`` or ``result`` line."""
        return next((str(e["session_id"]) for e in reversed(events) if e.get("session_id")), None)

    def end_state(self, events: list[dict[str, Any]], exit_code: int) -> EndState:
        """The ``result`` line: ``is_error`` / ``terminal_reason`` decide, not ``subtype``."""
        result = next((e for e in reversed(events) if e.get("type") == "result"), None)
        if result is None:
            return EndState(f"exited {exit_code} without a result line", "", api_error=True)
        error = bool(result.get("is_error")) or result.get("terminal_reason") == "api_error"
        status = (
            f"api_error {result.get('api_error_status')}"
            if error
            else str(result.get("terminal_reason") or "completed")
        )
        return EndState(status, str(result.get("result") or ""), api_error=error)
