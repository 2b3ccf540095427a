// A scripted agent for `ptyhub mcp` with the official TypeScript MCP SDK over stdio: runs
// steps in order, some of them concurrently with later ones, and records the server's
// notifications. Driven by notify_e2e_test.go.
//
// Usage: node notify.mjs /path/to/ptyhub STEPS_JSON
// (PTYHUB_E2E_MCP_ARGS, a JSON list, replaces the arguments ["mcp"].)
//
// STEPS_JSON: [{"step": "build", "tool": "exec_command", "args": {...},
//               "async": true,          // start the call, go on; see "await"
//               "progress": true},      // send a progressToken with the call
//              {"step": "r", "release": "/path/fifo"},   // write a line to a fifo
//              {"await": "build"},                         // wait for an async call
//              {"step": "ls", "resources": true},          // resources/list
//              {"step": "rd", "read": "ptyhub://..."},     // resources/read
//              {"step": "sub", "subscribe": "ptyhub://..."},
//              {"step": "n", "notification": "notifications/resources/updated",
//               "uri": "ptyhub://...", "count": 2},        // wait for the 2nd (30 s)
//              {"step": "g", "listedWithout": "ptyhub://..."}]
//                 // resources/list until it lacks the uri, again at each list_changed (30 s)
// Prints one JSON line per step: {"step", "isError", "text", "structured"} for tools,
// {"step", "result"} for the resource calls and awaited notifications, {"step", "error"}
// on failure; every notification received as {"notification": method, "params": ...};
// then {"step": "closed"}.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  ResourceUpdatedNotificationSchema,
  ResourceListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { writeFile } from "node:fs/promises";
import { callStep, emit, mcpTransport, stepsArgs } from "./e2e.mjs";

const [bin, steps] = stepsArgs("notify.mjs");
const transport = mcpTransport(bin);
const client = new Client({ name: "ptyhub-notify-e2e", version: "1.0.0" });

// Notifications seen so far, and waiters for the next matching one.
const seen = [];
const waiters = [];
function note(method, params) {
  emit({ notification: method, params });
  seen.push({ method, params });
  for (const w of waiters.splice(0)) {
    if (!w.match(method, params)) waiters.push(w);
    else w.resolve(params);
  }
}
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => note(n.method, n.params));
client.setNotificationHandler(ResourceListChangedNotificationSchema, (n) => note(n.method, n.params ?? {}));

await client.connect(transport);

const pending = new Map();
async function callTool(s) {
  const opts = {};
  if (s.progress) {
    opts.onprogress = (p) => note("notifications/progress", p);
    opts.resetTimeoutOnProgress = true;
  }
  opts.timeout = 120000;
  await callStep(client, s.step, s.tool, s.args, opts);
}

async function other(s, f) {
  try {
    emit({ step: s.step, result: await f() });
  } catch (err) {
    emit({ step: s.step, error: String(err?.message ?? err) });
  }
}

for (const s of steps) {
  if (s.tool) {
    const p = callTool(s);
    if (s.async) pending.set(s.step, p);
    else await p;
  } else if (s.release) {
    await other(s, async () => {
      await writeFile(s.release, "go\n");
      return "released";
    });
  } else if (s.await) {
    await pending.get(s.await);
  } else if (s.resources) {
    await other(s, () => client.listResources());
  } else if (s.read) {
    await other(s, () => client.readResource({ uri: s.read }));
  } else if (s.subscribe) {
    await other(s, () => client.subscribeResource({ uri: s.subscribe }));
  } else if (s.listedWithout) {
    // The server debounces list_changed: one notification may stand for several changes,
    // so wait for the list's state, listing again at each notification.
    await other(s, async () => {
      const deadline = Date.now() + 30000;
      for (;;) {
        const next = new Promise((resolve) =>
          waiters.push({ match: (m) => m === "notifications/resources/list_changed", resolve }));
        const list = await client.listResources();
        if (!list.resources.some((r) => r.uri === s.listedWithout)) return list;
        const left = deadline - Date.now();
        if (left <= 0) throw new Error("resources/list still has " + s.listedWithout + " after 30 s");
        let timer;
        await Promise.race([next, new Promise((r) => (timer = setTimeout(r, left)))]);
        clearTimeout(timer);
      }
    });
  } else if (s.notification) {
    await other(s, () => {
      // The count-th matching notification (default the first), seen or still to come.
      const want = s.count ?? 1;
      let n = 0;
      const match = (m, p) => m === s.notification && (!s.uri || p?.uri === s.uri) && ++n >= want;
      const got = seen.find((x) => match(x.method, x.params));
      if (got) return got.params;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no " + s.notification + " within 30 s")), 30000);
        waiters.push({ match, resolve: (p) => { clearTimeout(timer); resolve(p); } });
      });
    });
  }
}

await client.close();
emit({ step: "closed" });
