// OpenCode plugin: every shell command ends after the run's command budget, whatever timeout the
// model asks for. OpenCode's own default comes from OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS;
// this hook caps a larger `timeout` argument (milliseconds) before the bash tool runs.
const LIMIT_MS = Number("__LIMIT_MS__");

export default {
  id: "command-timeout",
  server: async () => ({
    "tool.execute.before": async (input, output) => {
      if (input.tool !== "bash" || !output || !output.args) return;
      const asked = Number(output.args.timeout);
      output.args.timeout = Number.isFinite(asked) && asked > 0 ? Math.min(asked, LIMIT_MS) : LIMIT_MS;
    },
  }),
};
