// Helpers shared by the end-to-end clients of this directory (client.mjs, steps.mjs,
// notify.mjs, waiting.mjs): the JSON lines they print, the stdio transport to
// `ptyhub mcp`, and a tool call printed as one step.

import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

// emit prints obj as one JSON line on stdout.
export const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

// stepsArgs returns [bin, steps] from the command line `node SCRIPT /path/to/ptyhub
// STEPS_JSON`, steps parsed; it exits with a usage line (status 2) when one is missing.
export function stepsArgs(script) {
  const [bin, stepsJSON] = process.argv.slice(2);
  if (!bin || !stepsJSON) {
    console.error(`usage: node ${script} /path/to/ptyhub STEPS_JSON`);
    process.exit(2);
  }
  return [bin, JSON.parse(stepsJSON)];
}

// mcpTransport returns a transport that spawns bin with args (by default those of
// PTYHUB_E2E_MCP_ARGS, a JSON list, else ["mcp"]), this process's environment and its
// stderr.
export function mcpTransport(bin, args = JSON.parse(process.env.PTYHUB_E2E_MCP_ARGS ?? '["mcp"]')) {
  return new StdioClientTransport({ command: bin, args, env: { ...process.env }, stderr: "inherit" });
}

// callStep calls tool with args on client (opts: the SDK's request options) and prints
// {"step": name, "isError", "text", "structured"}, or {"step": name, "error"} when the
// call itself failed; it returns the result, or null on failure.
export async function callStep(client, name, tool, args, opts) {
  try {
    const res = await client.callTool({ name: tool, arguments: args }, undefined, opts);
    const text = (res.content ?? [])
      .filter((c) => c.type === "text")
      .map((c) => c.text)
      .join("");
    emit({ step: name, isError: !!res.isError, text, structured: res.structuredContent ?? null });
    return res;
  } catch (err) {
    emit({ step: name, error: String(err?.message ?? err) });
    return null;
  }
}
