// ptyhub web: the session list (a WebSocket the server pushes the list on), one
// session's terminal (a WebSocket carrying its output, read-only until "Take over"),
// kill, and the replay of an ended session's transcript.
"use strict";

const $ = (sel) => document.querySelector(sel);
const wsURL = (path) => `ws://${location.host}${path}`;

let sessions = [];
let current = null; // {id, ws, term, fit, control, ended, player}

function fmtCPU(ms) {
  if (!ms) return "";
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  return Math.round(ms / 60000) + " min";
}

function stateText(s) {
  if (s.state !== "exited") return s.state;
  if (s.signal) return "exited (" + s.signal + ")";
  if (s.exit_code !== undefined && s.exit_code !== null) return "exited (" + s.exit_code + ")";
  return "exited";
}

function badge(cls, text, title) {
  const b = document.createElement("span");
  b.className = "badge " + cls;
  b.textContent = text;
  if (title) b.title = title;
  return b;
}

// setCell makes the i-th cell of tr show text with class cls, touching the DOM only where
// it differs, so a row under the pointer stays the same element across list pushes.
function setCell(tr, i, text, cls, title) {
  while (tr.cells.length <= i) tr.insertCell();
  const td = tr.cells[i];
  if (td.textContent !== text) td.textContent = text;
  if ((cls || "") !== td.className) td.className = cls || "";
  if (title !== undefined && td.title !== title) td.title = title;
  return td;
}

// setBadges makes the needs cell hold the badges of s (each a [class, text, title]).
function setBadges(td, s) {
  const want = [];
  if (s.needs_human) want.push(["human", "needs you", s.human_message || ""]);
  if (s.password_prompt) want.push(["password", "password prompt", ""]);
  else if (s.waiting_for_input) want.push(["waiting", "waiting for input", ""]);
  const key = JSON.stringify(want);
  if (td.dataset.badges === key) return;
  td.dataset.badges = key;
  td.textContent = "";
  for (const [cls, text, title] of want) td.appendChild(badge(cls, text, title));
}

// renderList reconciles the table with sessions: rows are kept per session id and
// updated in place, added and removed as sessions come and go, in the list's order.
function renderList() {
  const tbody = $("#sessions tbody");
  const rows = new Map();
  for (const tr of Array.from(tbody.rows)) rows.set(tr.dataset.id, tr);
  let running = 0, needs = 0;
  let at = 0;
  for (const s of sessions) {
    if (s.state === "running") running++;
    if (s.needs_human) needs++;
    let tr = rows.get(s.session_id);
    if (tr) {
      rows.delete(s.session_id);
    } else {
      tr = document.createElement("tr");
      tr.dataset.id = s.session_id;
    }
    if (tbody.rows[at] !== tr) tbody.insertBefore(tr, tbody.rows[at] || null);
    at++;
    tr.classList.toggle("selected", !!(current && current.id === s.session_id));
    for (const c of Array.from(tr.classList)) {
      if (c.startsWith("state-") && c !== "state-" + s.state) tr.classList.remove(c);
    }
    tr.classList.add("state-" + s.state);
    setCell(tr, 0, s.session_id);
    setCell(tr, 1, s.name || "");
    setCell(tr, 2, s.command, "cmd", s.command);
    setCell(tr, 3, stateText(s), "state");
    while (tr.cells.length <= 4) tr.insertCell();
    if (tr.cells[4].className !== "needs") tr.cells[4].className = "needs";
    setBadges(tr.cells[4], s);
    setCell(tr, 5, fmtCPU(s.cpu_ms));
    setCell(tr, 6, (s.ports || []).join(" "));
    setCell(tr, 7, s.last_line || "", "last", s.last_line || "");
  }
  for (const tr of rows.values()) tr.remove();
  $("#empty").hidden = sessions.length > 0;
  $("#summary").textContent = `${sessions.length} sessions, ${running} running` + (needs ? `, ${needs} need you` : "");
  if (current) updateAsk();
}

function connectList() {
  const ws = new WebSocket(wsURL("/ws/list"));
  ws.onopen = () => { $("#conn").textContent = "live"; };
  ws.onmessage = (e) => {
    sessions = JSON.parse(e.data).sessions || [];
    renderList();
    const want = new URLSearchParams(location.hash.slice(1)).get("session");
    if (want && !current && sessions.some((s) => s.session_id === want || s.name === want)) openSession(want);
  };
  ws.onclose = () => {
    $("#conn").textContent = "disconnected, retrying";
    setTimeout(connectList, 1000);
  };
}

function info(id) {
  return sessions.find((s) => s.session_id === id || s.name === id);
}

function updateAsk() {
  const s = info(current.id);
  const ask = $("#ask");
  if (s && s.needs_human) {
    ask.hidden = false;
    ask.textContent = "An agent asks for you" + (s.human_message ? ": " + s.human_message : ".");
  } else if (s && s.password_prompt && s.state === "running") {
    ask.hidden = false;
    ask.textContent = "The program waits at a password prompt. Take over to type it: the agent never sees what you type with echo off.";
  } else {
    ask.hidden = true;
  }
}

function closeSession() {
  if (!current) return;
  if (current.ws) { current.ws.onclose = null; current.ws.close(); }
  if (current.term) current.term.dispose();
  if (current.player) current.player.dispose();
  current = null;
  $("#term").textContent = "";
  $("#replay").textContent = "";
  $("#view").hidden = true;
  history.replaceState(null, "", "#");
  renderList();
}

function setMode(control) {
  current.control = control;
  $("#take").hidden = control || current.ended;
  $("#release").hidden = !control || current.ended;
  const m = $("#mode");
  m.textContent = control ? "you are typing (ctrl-] or Release gives it back)" : "read-only";
  m.className = control ? "control" : "";
  current.term.options.disableStdin = !control;
}

function fitSession() {
  const s = info(current.id);
  if (current.control) {
    current.fit.fit();
  } else if (s && s.rows && s.cols) {
    current.term.resize(s.cols, s.rows);
  }
  showSize();
}

// showSize puts the terminal's size on its element (data-size="ROWSxCOLS").
function showSize() {
  if (current && current.term) $("#term").dataset.size = current.term.rows + "x" + current.term.cols;
}

function send(msg) {
  if (current && current.ws && current.ws.readyState === WebSocket.OPEN) current.ws.send(JSON.stringify(msg));
}

function openSession(id) {
  closeSession();
  const s = info(id);
  id = s ? s.session_id : id;
  history.replaceState(null, "", "#session=" + encodeURIComponent(id));
  $("#view").hidden = false;
  $("#title").textContent = s ? `${id}  ${s.command}` : id;
  $("#status").textContent = "";
  current = { id, control: false, ended: false };
  $("#kill").hidden = !s || s.state !== "running";
  renderList();
  if (s && s.state === "exited") {
    replay(id);
    return;
  }
  const term = new Terminal({ fontSize: 13, scrollback: 5000, disableStdin: true, cursorBlink: false,
    fontFamily: "ui-monospace, DejaVu Sans Mono, monospace" });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open($("#term"));
  current.term = term;
  current.fit = fit;
  setMode(false);
  fitSession();
  term.attachCustomKeyEventHandler((ev) => {
    if (ev.type === "keydown" && ev.ctrlKey && ev.key === "]") {
      if (current.control) send({ type: "release" });
      return false;
    }
    return true;
  });
  term.onData((d) => { if (current && current.control) send({ type: "input", data: d }); });
  term.onResize(({ rows, cols }) => {
    showSize();
    if (current && current.control) send({ type: "resize", rows, cols });
  });
  const ws = new WebSocket(wsURL("/ws/attach?id=" + encodeURIComponent(id)));
  ws.binaryType = "arraybuffer";
  current.ws = ws;
  const cur = current;
  ws.onmessage = (e) => {
    if (cur !== current) return;
    if (typeof e.data !== "string") {
      term.write(new Uint8Array(e.data));
      return;
    }
    const m = JSON.parse(e.data);
    if (m.type === "mode") {
      term.reset();
      setMode(m.mode === "control");
      fitSession();
      if (m.mode === "control") term.focus();
    } else if (m.type === "end") {
      cur.ended = true;
      setMode(false);
      $("#kill").hidden = true;
      $("#status").textContent = "The session ended: " + (m.exit || "exited") + ".";
    } else if (m.type === "error") {
      $("#status").textContent = m.message;
    }
  };
  ws.onclose = () => {
    if (cur === current && !cur.ended) $("#status").textContent = "Disconnected from the session.";
  };
  updateAsk();
}

function replay(id) {
  $("#take").hidden = true;
  $("#release").hidden = true;
  $("#mode").textContent = "replay of the transcript";
  $("#mode").className = "";
  current.ended = true;
  current.player = AsciinemaPlayer.create("/api/cast?id=" + encodeURIComponent(id), $("#replay"),
    { autoPlay: true, idleTimeLimit: 1, fit: "width" });
  updateAsk();
}

$("#take").addEventListener("click", () => {
  if (!current || !current.fit) return;
  const d = current.fit.proposeDimensions() || { rows: 24, cols: 80 };
  send({ type: "take", rows: d.rows, cols: d.cols });
});
$("#release").addEventListener("click", () => send({ type: "release" }));
$("#close").addEventListener("click", closeSession);
$("#kill").addEventListener("click", async () => {
  if (!current) return;
  const s = info(current.id);
  if (!confirm(`Kill session ${current.id}${s ? " (" + s.command + ")" : ""} and all its processes?`)) return;
  const r = await fetch("/api/kill", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ session_id: current.id }) });
  $("#status").textContent = r.ok ? "Killed." : "Kill failed: " + (await r.text());
});
// One listener for every row: rows are updated in place, never rebuilt.
$("#sessions tbody").addEventListener("click", (e) => {
  const tr = e.target.closest("tr");
  if (tr && tr.dataset.id) openSession(tr.dataset.id);
});
window.addEventListener("resize", () => { if (current && current.term) fitSession(); });

connectList();
