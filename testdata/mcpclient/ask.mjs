// ask_human end to end through the official TypeScript MCP SDK (ask_e2e_test.go).
//
// Usage: node ask.mjs /path/to/ptyhub url|plain
//   url:   the client declares URL-mode elicitation and accepts the page it is sent;
//   plain: it declares no elicitation and relays the result's text instead.
// It starts a program that asks for a password, calls ask_human, and prints one JSON
// line per step: {"step": "exec"|"asking"|"elicit"|"ask", ...}. The Go test plays the
// person: it sees the session marked in `ptyhub ls`, attaches and types.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, mode] = process.argv.slice(2);
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const capabilities = mode === "url" ? { elicitation: { url: {} } } : {};
const client = new Client({ name: "ptyhub-ask-e2e", version: "1.0.0" }, { capabilities });
if (mode === "url") {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    emit({ step: "elicit", params: req.params });
    return { action: "accept" };
  });
}
const transport = new StdioClientTransport({ command: bin, args: ["mcp"], env: { ...process.env }, stderr: "inherit" });
await client.connect(transport);

const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
  return { isError: !!res.isError, text, structured: res.structuredContent ?? null };
};

const prog = [
  "import getpass",
  "pw = getpass.getpass('[sudo] password for agent: ')",
  "print('authenticated with %d characters' % len(pw), flush=True)",
  "input('next? ')",
].join("\n");
const exec = await call("exec_command", { argv: ["python3", "-c", prog], yield_time_ms: 30000 });
emit({ step: "exec", ...exec });
const id = exec.structured.session_id;
// The test attaches a terminal first (it must ring), then says "go" on stdin.
await new Promise((resolve) => process.stdin.once("data", resolve));
process.stdin.pause();
emit({ step: "asking", session_id: id });
const ask = await call("ask_human", { session_id: id, message: "type the sudo password", timeout_ms: 90000 });
emit({ step: "ask", ...ask });
const list = await call("list_sessions", {});
emit({ step: "list", ...list });
await call("kill_session", { session_id: id });
await client.close();
