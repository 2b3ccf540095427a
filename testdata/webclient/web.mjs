// Drives Debian's chromium (headless) against `ptyhub web` for web_e2e_test.go.
//
// Usage: node web.mjs CONFIG_JSON
//   {url, chromium, ptyhub, password, screenshot?}
// The environment carries the test's PTYHUB_SOCKET. It starts the session the test names
// through the CLI (as an agent would), watches and types in the page, and prints one JSON
// report on stdout: what the page showed at each step, and the agent's results. Every
// wait is on an event in the page (waitForFunction), never a sleep.
import { chromium } from "playwright-core";
import { spawnSync } from "node:child_process";

const cfg = JSON.parse(process.argv[2]);
const report = { steps: [], agent: [] };
const step = (name, extra = {}) => { report.steps.push({ name, ...extra }); };
// ptyhub runs the CLI; `exec` of a program still running exits non-zero by design, so
// only a failure to run it at all is an error.
const ptyhub = (...args) => {
  const r = spawnSync(cfg.ptyhub, args, { encoding: "utf8", env: process.env });
  if (r.error) throw r.error;
  if (r.status !== 0 && !r.stdout) throw new Error(`ptyhub ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};
const agent = (...args) => { const out = ptyhub(...args); report.agent.push(out); return out; };
const T = 20000;

const browser = await chromium.launch({ executablePath: cfg.chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
  page.on("dialog", (d) => d.accept()); // the kill confirmation
  const termText = () => page.evaluate(() => {
    const rows = document.querySelector("#term .xterm-rows");
    return rows ? rows.innerText : "";
  });
  const waitTerm = (text) => page.waitForFunction((t) => {
    const rows = document.querySelector("#term .xterm-rows");
    return rows && rows.innerText.includes(t);
  }, text, { timeout: T });

  await page.goto(cfg.url);
  await page.waitForFunction(() => document.querySelector("#conn").textContent === "live", null, { timeout: T });
  step("opened", { location: page.url() });

  // An agent starts a session: the list shows it.
  const prog = [
    "import getpass, os",
    "print('ready', flush=True)",
    "name = input('name? ')",
    "print('hello ' + name.upper(), flush=True)",
    "pw = getpass.getpass('password: ')",
    "print('pw-length %d' % len(pw), flush=True)",
    "while True:",
    "    cmd = input('cmd? ')",
    "    if cmd == 'size':",
    "        c, r = os.get_terminal_size()",
    "        print('size %dx%d' % (r, c), flush=True)",
    "    elif cmd == 'quit':",
    "        break",
    "    else:",
    "        print('unknown %r' % cmd, flush=True)",
  ].join("\n");
  agent("exec", "--json", "--yield", "0", "--name", "webtest", "--", "python3", "-c", prog);
  // The list is redrawn on every change: locators, not element handles.
  const row = page.locator('#sessions tbody tr:has(td:text-is("webtest"))');
  await row.waitFor({ timeout: T });
  const id = await row.getAttribute("data-id");
  step("listed", { id, row: await row.innerText() });
  // The row stays the same element while the list updates (a click is not lost to a redraw).
  const rowElement = await row.elementHandle();

  // Open it: read-only, the screen repainted, then live output.
  await row.click({ timeout: T });
  await waitTerm("name?");
  step("repainted", { mode: await page.textContent("#mode") });
  agent("write", "--json", "webtest", "alice\n");
  await waitTerm("hello ALICE");
  step("live", { text: await termText() });
  // Read-only: keys typed into the page do not reach the program.
  await page.click("#term");
  await page.keyboard.type("ignored\n");
  await page.waitForFunction(() => document.querySelector("#sessions tbody tr.selected .needs").innerText.includes("password"), null, { timeout: T });
  step("password-listed", { needs: await page.innerText("#sessions tbody tr.selected .needs"), ask: await page.innerText("#ask"),
    kept: await rowElement.evaluate((e) => e.isConnected) });

  // Take over and type the password, then a command.
  await page.click("#take");
  await page.waitForFunction(() => document.querySelector("#mode").classList.contains("control"), null, { timeout: T });
  await waitTerm("password:");
  await page.click("#term");
  await page.keyboard.type(cfg.password + "\n");
  await waitTerm("pw-length " + cfg.password.length);
  step("typed", { text: await termText() });

  // Resize follows the page: the program sees xterm's size, before and after.
  const dims = () => page.getAttribute("#term", "data-size");
  await page.keyboard.type("size\n");
  await page.waitForFunction(() => /size \d+x\d+/.test(document.querySelector("#term .xterm-rows").innerText), null, { timeout: T });
  const size1 = (await termText()).match(/size (\d+)x(\d+)/);
  // The live terminal takes the view down to the window's bottom (not half of it).
  const fill = () => page.evaluate(() => document.querySelector("#term").getBoundingClientRect().bottom / window.innerHeight);
  step("size1", { rows: +size1[1], cols: +size1[2], xtermRows: await dims(), fill: await fill() });
  await page.setViewportSize({ width: 800, height: 600 });
  await page.waitForFunction((old) => document.querySelector("#term").dataset.size !== old, size1[1] + "x" + size1[2], { timeout: T });
  await page.keyboard.type("clear-marker\nsize\n");
  await page.waitForFunction((old) => {
    const m = [...document.querySelector("#term .xterm-rows").innerText.matchAll(/size (\d+)x(\d+)/g)];
    return m.length > 0 && m[m.length - 1][0] !== old;
  }, size1[0], { timeout: T });
  const all = [...(await termText()).matchAll(/size (\d+)x(\d+)/g)];
  const size2 = all[all.length - 1];
  step("size2", { rows: +size2[1], cols: +size2[2], xtermRows: await dims(), fill: await fill() });
  if (cfg.screenshot) await page.screenshot({ path: cfg.screenshot });

  // ctrl-] gives the session back as Release does, and the key itself reaches nothing.
  const readOnly = () => page.waitForFunction(() => document.querySelector("#mode").textContent === "read-only", null, { timeout: T });
  await page.keyboard.press("Control+BracketRight");
  await readOnly();
  step("ctrl-released", { take: await page.isVisible("#take"), release: await page.isVisible("#release") });
  // Take over again: the next line the program reads shows no trace of the key.
  await page.click("#take");
  await page.waitForFunction(() => document.querySelector("#mode").classList.contains("control"), null, { timeout: T });
  await page.click("#term");
  await page.keyboard.type("after\n");
  await page.waitForFunction(() => /unknown '.*after'/.test(document.querySelector("#term .xterm-rows").innerText), null, { timeout: T });
  step("retaken", { text: (await termText()).match(/unknown '.*after'/)[0] });

  // Release: read-only again; the agent finishes the program.
  await page.click("#release");
  await page.waitForFunction(() => document.querySelector("#mode").textContent === "read-only", null, { timeout: T });
  step("released");
  agent("write", "--json", "webtest", "quit\n");
  await page.waitForFunction(() => document.querySelector("#status").innerText.includes("ended"), null, { timeout: T });
  step("ended", { status: await page.innerText("#status"), text: await termText() });

  // The ended session replays from its transcript.
  await page.waitForSelector(`#sessions tbody tr[data-id="${id}"].state-exited`, { timeout: T });
  await page.click(`#sessions tbody tr[data-id="${id}"]`, { timeout: T });
  await page.waitForFunction(() => document.querySelector("#replay").innerText.includes("hello ALICE"), null, { timeout: T });
  step("replayed", { text: await page.innerText("#replay") });

  // Kill from the page (with its confirmation), on a second session.
  agent("exec", "--json", "--yield", "0", "--name", "sleeper", "--", "sleep", "1000");
  const srow = page.locator('#sessions tbody tr:has(td:text-is("sleeper"))');
  await srow.click({ timeout: T });
  await page.waitForSelector("#kill:not([hidden])", { timeout: T });
  await page.click("#kill");
  await page.waitForSelector('#sessions tbody tr.state-exited:has(td:text-is("sleeper"))', { timeout: T });
  step("killed");

  report.pageText = await page.evaluate(() => document.body.innerText);
  report.ok = true;
} catch (e) {
  report.ok = false;
  report.error = String(e && e.stack || e);
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report) + "\n");
