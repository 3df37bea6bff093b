// Pi extension: every bash command ends after the run's command budget. Pi's bash tool has no
// default timeout and takes any `timeout` (seconds) the model gives; this sets and caps it.
const LIMIT_S = Number("__LIMIT_S__");

export default function (pi: any) {
  pi.on("tool_call", async (event: any) => {
    if (event.toolName !== "bash" || !event.input) return;
    const asked = Number(event.input.timeout);
    event.input.timeout = Number.isFinite(asked) && asked > 0 ? Math.min(asked, LIMIT_S) : LIMIT_S;
  });
}
