// End-to-end client for `ptyhub mcp`, using the official TypeScript MCP SDK over stdio.
//
// Usage: node client.mjs /path/to/ptyhub
//
// Spawns `ptyhub mcp`, calls each of the six tools, and prints one JSON line per step:
//   {"step": "...", "isError": bool, "text": "...", "structured": {...}}
// or {"step": "...", "error": "..."} when the call itself failed. mcp_e2e_test.go runs it
// and checks the lines. PTYHUB_E2E_MARKER, when set, is put into the environment of one
// long-running session so the Go test can check that closing the client ends it.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const bin = process.argv[2];
if (!bin) {
  console.error("usage: node client.mjs /path/to/ptyhub");
  process.exit(2);
}

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp"],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "ptyhub-e2e", version: "1.0.0" });

async function step(name, tool, args) {
  try {
    const res = await client.callTool({ name: tool, arguments: args });
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

await client.connect(transport);
emit({ step: "connect", server: client.getServerVersion(), pid: transport.pid });

const tools = await client.listTools();
emit({ step: "list_tools", tools: tools.tools.map((t) => t.name) });

await step("exec_echo", "exec_command", { cmd: "echo hi" });

const bash = await step("exec_bash", "exec_command", {
  argv: ["bash", "--norc", "--noprofile", "-i"],
  env: { PS1: "$ " },
  wait_for: "\\$ $",
  yield_time_ms: 10000,
});
const id = bash?.structuredContent?.session_id;

await step("write_42", "write_stdin", {
  session_id: id,
  chars: "echo $((6*7))\n",
  wait_for: "42",
  yield_time_ms: 10000,
});
await step("read_output", "read_output", { session_id: id });
await step("list_sessions", "list_sessions", {});
await step("resize", "resize_session", { session_id: id, rows: 40, cols: 100 });
await step("stty_size", "write_stdin", {
  session_id: id,
  chars: "stty size\n",
  wait_for: "40 100",
  yield_time_ms: 10000,
});
await step("kill", "kill_session", { session_id: id });
await step("bad_argument", "exec_command", { cmd: "ls", yield_ms: 5 });
await step("unknown_session", "write_stdin", { session_id: "987654", chars: "x" });

if (process.env.PTYHUB_E2E_MARKER) {
  await step("exec_marked", "exec_command", {
    cmd: "trap '' HUP TERM; sleep 1000",
    env: { PTYHUB_TEST_MARKER: process.env.PTYHUB_E2E_MARKER },
    yield_time_ms: 200,
  });
}

// Closing the client closes ptyhub's stdin; ptyhub must end its sessions and exit.
await client.close();
emit({ step: "closed" });
