// A scripted agent for `ptyhub mcp` with the official TypeScript MCP SDK over stdio: runs
// steps one after the other; a step's arguments may name the session an earlier step
// returned. Driven by truth_e2e_test.go.
//
// Usage: node steps.mjs /path/to/ptyhub STEPS_JSON
// (PTYHUB_E2E_MCP_ARGS, a JSON list, replaces the arguments ["mcp"].)
//
// STEPS_JSON: [{"step": "a", "tool": "exec_command", "args": {...}},
//              {"step": "k", "tool": "kill_session", "args": {"session_id": "$a"}},
//                 // "$a": the session_id of step a's structured result
//              {"step": "ls", "resources": true},          // resources/list
//              {"step": "rd", "read": "ptyhub://session/$a"},  // resources/read
//              {"step": "r", "run": ["docker", "restart", "c"]}]  // a command, to its end
// Prints one JSON line per step: {"step", "isError", "text", "structured"} for tools,
// {"step", "result"} for the resource calls, {"step", "error"} on failure; then
// {"step": "closed"}.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { execFileSync } from "node:child_process";
import { callStep, emit, mcpTransport, stepsArgs } from "./e2e.mjs";

const [bin, steps] = stepsArgs("steps.mjs");
const transport = mcpTransport(bin);
const client = new Client({ name: "ptyhub-steps-e2e", version: "1.0.0" });
await client.connect(transport);

// The session ids earlier steps returned, by step name.
const ids = {};
const subst = (v) => {
  if (typeof v === "string") {
    return v.replace(/\$([A-Za-z0-9_]+)/g, (m, name) => (name in ids ? ids[name] : m));
  }
  if (Array.isArray(v)) return v.map(subst);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x)]));
  }
  return v;
};

for (const s of steps) {
  try {
    if (s.tool) {
      const res = await callStep(client, s.step, s.tool, subst(s.args ?? {}), { timeout: 120000 });
      if (res?.structuredContent?.session_id) ids[s.step] = res.structuredContent.session_id;
    } else if (s.resources) {
      emit({ step: s.step, result: await client.listResources() });
    } else if (s.read) {
      emit({ step: s.step, result: await client.readResource({ uri: subst(s.read) }) });
    } else if (s.run) {
      const out = execFileSync(s.run[0], s.run.slice(1), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      emit({ step: s.step, result: { output: out } });
    }
  } catch (err) {
    emit({ step: s.step, error: String(err?.message ?? err) });
  }
}
await client.close();
emit({ step: "closed" });
