// Several agents at once: each spawns its own `ptyhub mcp` with the official TypeScript
// MCP SDK's stdio transport, in its own directory and with the environment its MCP
// configuration gives it, and makes its tool calls while all are connected (so they share
// one ptyhub server).
//
// Usage: node callers.mjs /path/to/ptyhub SPEC_JSON
//
// SPEC_JSON: [{"name": "a", "args": ["mcp", ...], "cwd": "...", "env": {...},
//              "calls": [{"step": "...", "tool": "exec_command", "args": {...}}]}, ...]
// Prints one JSON line per call: {"agent": name, "step": ..., "isError": bool,
// "text": "...", "structured": {...}} or {"agent", "step", "error"}; then
// {"step": "closed"} once every client closed.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, specJSON] = process.argv.slice(2);
if (!bin || !specJSON) {
  console.error("usage: node callers.mjs /path/to/ptyhub SPEC_JSON");
  process.exit(2);
}
const spec = JSON.parse(specJSON);
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const agents = [];
for (const a of spec) {
  const transport = new StdioClientTransport({
    command: bin,
    args: a.args,
    cwd: a.cwd,
    env: a.env,
    stderr: "inherit",
  });
  const client = new Client({ name: "ptyhub-callers-" + a.name, version: "1.0.0" });
  await client.connect(transport);
  agents.push({ a, client });
}

for (const { a, client } of agents) {
  for (const c of a.calls) {
    try {
      const res = await client.callTool({ name: c.tool, arguments: c.args });
      const text = (res.content ?? [])
        .filter((x) => x.type === "text")
        .map((x) => x.text)
        .join("");
      emit({ agent: a.name, step: c.step, isError: !!res.isError, text, structured: res.structuredContent ?? null });
    } catch (err) {
      emit({ agent: a.name, step: c.step, error: String(err?.message ?? err) });
    }
  }
}

for (const { client } of agents) {
  await client.close();
}
emit({ step: "closed" });
