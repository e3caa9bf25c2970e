// Helpers shared by the seed and the MCP client scripts.
import assert from "node:assert/strict";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function collect(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

// eventually polls check until it returns a truthy value: ingest, usage
// and statistics are applied by queue consumers after the 202.
export async function eventually(what, check, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.stack}` : ""}`);
    await sleep(100);
  }
}

// The conversation's messages are a pure function of the thread, the turn
// and the role, so the MCP side can rebuild the exact expected list. The
// text mixes escapes that JSON encoders treat differently (<, &, quotes,
// backslashes, U+2028) and characters outside the BMP, so a page budget
// counted in the wrong unit or an item cut twice shows up.
export function message(thread, turn, role) {
  const words = ["ledger", "Ünïcødé", "<b>bold</b>", "a & b", '"quoted"', "back\\slash", "line\u2028sep", "𝄞 clef", "emoji 🚀", "plain"];
  let body = "";
  for (let i = 0; body.length < 180 + ((turn * 37) % 160); i++) body += words[(turn + i) % words.length] + " ";
  return { role, content: `${thread} ${role} ${turn}: ${body.trim()}` };
}

export function threadMessages(thread, turns) {
  const out = [];
  for (let i = 0; i < turns; i++) out.push(message(thread, i, "user"), message(thread, i, "assistant"));
  return out;
}

// codePoints is the length the server's character budget counts.
export const codePoints = (s) => [...s].length;

// recorder wraps fetch: every request with its status, so a 5xx fails the
// run even when the SDK would only log it.
export function recorder() {
  const calls = [];
  const fetchImpl = async (url, init) => {
    const res = await fetch(url, init);
    calls.push({ method: init?.method ?? "GET", url: String(url), status: res.status });
    return res;
  };
  return { calls, fetchImpl };
}

// consoleErrors collects what the SDK reports on the console instead of
// throwing (export failures of background batches).
export function consoleErrors() {
  const errors = [];
  for (const level of ["error", "warn"]) {
    const orig = console[level];
    console[level] = (...args) => {
      const text = args.map((a) => (a instanceof Error ? a.stack : String(a))).join(" ");
      if (!/deprecated|DeprecationWarning/i.test(text)) errors.push(`${level}: ${text}`);
      orig(...args);
    };
  }
  return errors;
}

export function noServerErrors(calls) {
  const bad = calls.filter((c) => c.status >= 500);
  assert.deepEqual(bad, [], "requests answered 5xx");
}
