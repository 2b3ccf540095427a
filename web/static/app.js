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

// setText changes an element's text only when it differs (no needless layout).
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

// renderList updates the table in place: a session's row and its cells stay the same
// elements from one update to the next, so a click on the row of a busy session (its
// list changes several times a second) is never lost to a redraw between the press and
// the release. Clicks are handled once, on the table's body.
function renderList() {
  const tbody = $("#sessions tbody");
  const old = new Map([...tbody.rows].map((tr) => [tr.dataset.id, tr]));
  let running = 0, needs = 0;
  sessions.forEach((s, i) => {
    if (s.state === "running") running++;
    if (s.needs_human) needs++;
    let tr = old.get(s.session_id);
    if (tr) {
      old.delete(s.session_id);
    } else {
      tr = document.createElement("tr");
      tr.dataset.id = s.session_id;
      for (const cls of ["", "", "cmd", "state", "needs", "", "", "last"]) {
        const td = document.createElement("td");
        if (cls) td.className = cls;
        tr.appendChild(td);
      }
    }
    tr.className = "state-" + s.state + (current && current.id === s.session_id ? " selected" : "");
    const td = tr.cells;
    setText(td[0], s.session_id);
    setText(td[1], s.name || "");
    setText(td[2], s.command);
    td[2].title = s.command;
    setText(td[3], stateText(s));
    const key = [s.needs_human, s.human_message, s.password_prompt, s.waiting_for_input].join("\x00");
    if (td[4].dataset.key !== key) {
      td[4].dataset.key = key;
      td[4].textContent = "";
      if (s.needs_human) td[4].appendChild(badge("human", "needs you", s.human_message || ""));
      if (s.password_prompt) td[4].appendChild(badge("password", "password prompt"));
      else if (s.waiting_for_input) td[4].appendChild(badge("waiting", "waiting for input"));
    }
    setText(td[5], fmtCPU(s.cpu_ms));
    setText(td[6], (s.ports || []).join(" "));
    setText(td[7], s.last_line || "");
    td[7].title = s.last_line || "";
    if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
  });
  for (const tr of old.values()) tr.remove();
  $("#empty").hidden = sessions.length > 0;
  $("#summary").textContent = `${sessions.length} sessions, ${running} running` + (needs ? `, ${needs} need you` : "");
  if (current) updateAsk();
}

$("#sessions tbody").addEventListener("click", (e) => {
  const tr = e.target.closest("tr[data-id]");
  if (tr) openSession(tr.dataset.id);
});

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
window.addEventListener("resize", () => { if (current && current.term) fitSession(); });

connectList();
