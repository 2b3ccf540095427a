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
import { callStep, emit, mcpTransport } from "./e2e.mjs";

const bin = process.argv[2];
if (!bin) {
  console.error("usage: node client.mjs /path/to/ptyhub");
  process.exit(2);
}

const transport = mcpTransport(bin, ["mcp"]);
const client = new Client({ name: "ptyhub-e2e", version: "1.0.0" });
const step = (name, tool, args) => callStep(client, name, tool, args);

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

// The agent's contract (run with a third argument "contract"): wait_for on the
// program's output, polls that wait for news, keys that follow terminal modes, control
// keys on pipes, Codex's arguments, exit answers, exact cut ranges, terminal queries.
if (process.argv[3] === "contract") {
  const shell = async (name) =>
    (await step(name, "exec_command", {
      argv: ["bash", "--norc", "--noprofile", "-i"],
      env: { PS1: "$ " },
      yield_time_ms: 10000,
    }))?.structuredContent?.session_id;
  let sh = await shell("c_shell");
  await step("c_wait_for", "write_stdin", {
    session_id: sh, chars: "sleep 0.3; echo DONE\n", wait_for: "^DONE$", yield_time_ms: 10000,
  });
  sh = await shell("c_shell2");
  await step("c_bg", "write_stdin", {
    session_id: sh, chars: "(sleep 0.5; echo BG$((6*7))DONE) &\n", yield_time_ms: 10000,
  });
  await step("c_poll", "write_stdin", { session_id: sh, chars: "", yield_time_ms: 10000 });
  const less = (await step("c_less", "exec_command", { cmd: "seq 1 200 | less", yield_time_ms: 10000 }))
    ?.structuredContent?.session_id;
  await step("c_down", "write_stdin", { session_id: less, keys: ["Down"], yield_time_ms: 10000 });
  await step("c_screen", "read_output", { session_id: less, view: "screen" });
  const py = (await step("c_pipe", "exec_command", {
    argv: ["python3", "-u", "-c",
      "import time\ntry:\n    print('READY')\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('INTERRUPTED')\n"],
    tty: false, wait_for: "^READY$", yield_time_ms: 10000,
  }))?.structuredContent?.session_id;
  await step("c_ctrl_c", "write_stdin", { session_id: py, chars: "\u0003", wait_for: "INTERRUPTED", yield_time_ms: 10000 });
  await step("c_codex_args", "exec_command", {
    cmd: "echo codex", justification: "Do you want to echo?", sandbox_permissions: "require_escalated", prefix_rule: ["echo"],
  });
  const sl = (await step("c_sleep", "exec_command", { argv: ["sleep", "60"], yield_time_ms: 0 }))
    ?.structuredContent?.session_id;
  await step("c_term", "kill_session", { session_id: sl, signal: "TERM" });
  await step("c_write_exited", "write_stdin", { session_id: sl, chars: "x\n" });
  const seq = await step("c_seq", "exec_command", { cmd: "seq 1 2000", max_output_tokens: 300 });
  const rng = seq?.structuredContent?.truncated_range;
  if (rng) {
    await step("c_read_range", "read_output", {
      session_id: seq.structuredContent.session_id, from: rng[0], to: rng[1], max_output_tokens: 250000,
    });
    await step("c_read_nested", "read_output", {
      session_id: seq.structuredContent.session_id, from: rng[0], to: rng[1], max_output_tokens: 300,
    });
    await step("c_read_all", "read_output", {
      session_id: seq.structuredContent.session_id, from: 0, to: seq.structuredContent.next_offset, max_output_tokens: 2000,
    });
  }
  await step("c_cpr", "exec_command", {
    argv: ["python3", "-c",
      "import os, tty\ntty.setraw(0)\nos.write(1, b'\\x1b[6n')\nb = b''\nwhile not b.endswith(b'R'):\n    b += os.read(0, 64)\nos.write(1, b'GOT ' + b[1:] + b'\\r\\n')\n"],
    yield_time_ms: 10000,
  });
}

// Closing the client closes ptyhub's stdin; ptyhub must end its sessions and exit.
await client.close();
emit({ step: "closed" });
