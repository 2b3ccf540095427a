// End-to-end client for `ptyhub mcp` driving real programs the way an agent does, with the
// official TypeScript MCP SDK over stdio: vim (insert, Escape, :wq) and node's REPL
// (.exit). Prints one JSON line per step, {"step", "isError", "text", "structured"}, or
// {"step", "error"}; waiting_programs_e2e_test.go checks them.
//
// Usage: node waiting.mjs /path/to/ptyhub /path/to/file-for-vim

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { callStep, emit, mcpTransport } from "./e2e.mjs";

const [bin, file] = process.argv.slice(2);
if (!bin || !file) {
  console.error("usage: node waiting.mjs /path/to/ptyhub /path/to/file");
  process.exit(2);
}
const transport = mcpTransport(bin, ["mcp"]);
const client = new Client({ name: "ptyhub-e2e-waiting", version: "1.0.0" });
const step = (name, tool, args) => callStep(client, name, tool, args);

await client.connect(transport);
const vim = await step("vim", "exec_command", { argv: ["vim", "-u", "DEFAULTS", "-i", "NONE", "-n", file], yield_time_ms: 30000 });
const v = vim?.structuredContent?.session_id;
await step("vim_insert", "write_stdin", { session_id: v, chars: "ihello", keys: ["Escape"], yield_time_ms: 30000 });
await step("vim_wq", "write_stdin", { session_id: v, chars: ":wq", keys: ["Enter"], yield_time_ms: 30000 });
const node = await step("node", "exec_command", { argv: ["node"], yield_time_ms: 30000 });
await step("node_exit", "write_stdin", { session_id: node?.structuredContent?.session_id, chars: ".exit\n", yield_time_ms: 30000 });
await client.close();
emit({ step: "closed" });
