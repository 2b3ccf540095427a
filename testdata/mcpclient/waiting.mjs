// End-to-end client for `ptyhub mcp` driving real programs the way an agent does, with the
// official TypeScript MCP SDK over stdio: vim (insert, Escape, :wq) and node's REPL
// (.exit). Prints one JSON line per step, {"step", "isError", "text", "structured"}, or
// {"step", "error"}; waiting_programs_e2e_test.go checks them.
//
// Usage: node waiting.mjs /path/to/ptyhub /path/to/file-for-vim

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, file] = process.argv.slice(2);
if (!bin || !file) {
  console.error("usage: node waiting.mjs /path/to/ptyhub /path/to/file");
  process.exit(2);
}
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const transport = new StdioClientTransport({ command: bin, args: ["mcp"], env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "ptyhub-e2e-waiting", version: "1.0.0" });

async function step(name, tool, args) {
  try {
    const res = await client.callTool({ name: tool, arguments: args });
    const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
    emit({ step: name, isError: !!res.isError, text, structured: res.structuredContent ?? null });
    return res;
  } catch (err) {
    emit({ step: name, error: String(err?.message ?? err) });
    return null;
  }
}

await client.connect(transport);
const vim = await step("vim", "exec_command", { argv: ["vim", "-u", "DEFAULTS", "-i", "NONE", "-n", file], yield_time_ms: 30000 });
const v = vim?.structuredContent?.session_id;
await step("vim_insert", "write_stdin", { session_id: v, chars: "ihello", keys: ["Escape"], yield_time_ms: 30000 });
await step("vim_wq", "write_stdin", { session_id: v, chars: ":wq", keys: ["Enter"], yield_time_ms: 30000 });
const node = await step("node", "exec_command", { argv: ["node"], yield_time_ms: 30000 });
await step("node_exit", "write_stdin", { session_id: node?.structuredContent?.session_id, chars: ".exit\n", yield_time_ms: 30000 });
await client.close();
emit({ step: "closed" });
