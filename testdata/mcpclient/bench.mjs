// The REPL turn through the official TypeScript MCP SDK, for cmd/ptyhub-bench: starts
// `ptyhub mcp` (with this process's environment), runs `PYTHON -q` in it until its prompt,
// prints {"ready": true}, then for each line read on stdin does one turn (write_stdin
// "1+1\n", wait_for the next prompt) and prints {"ms": wall time of callTool, "ok": the
// output held "2\n>>> "}. At the end of stdin it removes the session and exits.
//
// Usage: node bench.mjs /path/to/ptyhub /path/to/python3

import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, python] = process.argv.slice(2);
if (!bin || !python) {
  console.error("usage: node bench.mjs /path/to/ptyhub /path/to/python3");
  process.exit(2);
}
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const transport = new StdioClientTransport({ command: bin, args: ["mcp"], env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "ptyhub-bench-ts", version: "1.0.0" });
await client.connect(transport);
const started = await client.callTool({ name: "exec_command", arguments: { argv: [python, "-q"], wait_for: ">>> $" } });
const id = started.structuredContent?.session_id;
if (!id || started.structuredContent?.returned_because !== "pattern") {
  emit({ error: "python did not prompt: " + JSON.stringify(started) });
  process.exit(1);
}
emit({ ready: true });
for await (const _ of createInterface({ input: process.stdin })) {
  const t0 = process.hrtime.bigint();
  const res = await client.callTool({ name: "write_stdin", arguments: { session_id: id, chars: "1+1\n", wait_for: ">>> $", yield_time_ms: 10000 } });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  emit({ ms, ok: !res.isError && (res.structuredContent?.output ?? "").includes("2\n>>> ") });
}
await client.callTool({ name: "kill_session", arguments: { session_id: id, remove: true } });
await client.close();
