// The official MCP TypeScript SDK over streamable HTTP.
// Environment: MCP_URL (the server's base URL, without /mcp), SERVICE_API_KEY,
// optional SERVICE_WORKSPACE_ID and SERVICE_ENDPOINT (sent as headers), FIXTURE.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { suite, fixture, ok } from "./suite.mjs";

const base = process.env.MCP_URL;
const headers = { "SERVICE-API-KEY": process.env.SERVICE_API_KEY };
if (process.env.SERVICE_WORKSPACE_ID) headers["SERVICE-WORKSPACE-ID"] = process.env.SERVICE_WORKSPACE_ID;
if (process.env.SERVICE_ENDPOINT) headers["SERVICE-ENDPOINT"] = process.env.SERVICE_ENDPOINT;

async function connect(h = headers) {
  const client = new Client({ name: "agentplane-mcp-http-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp"), { requestInit: { headers: h } }));
  return client;
}

test("health answers without authentication", async () => {
  const res = await fetch(base + "/health");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/plain/);
});

test("a request without SERVICE-API-KEY is a 401 JSON error", async () => {
  const res = await fetch(base + "/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), { detail: "Missing SERVICE-API-KEY header" });
});

test("the server is stateless: no session id, GET is refused", async () => {
  const res = await fetch(base + "/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "SERVICE-API-KEY": headers["SERVICE-API-KEY"] },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("mcp-session-id"), null);
  assert.match(res.headers.get("content-type"), /^application\/json/);
  const get = await fetch(base + "/mcp", { headers: { accept: "text/event-stream", "SERVICE-API-KEY": headers["SERVICE-API-KEY"] } });
  assert.equal(get.status, 405);
});

test("a wrong key is a tool error, not a crash", async () => {
  const client = await connect({ ...headers, "SERVICE-API-KEY": "not-a-valid-key" });
  const res = await client.callTool({ name: "list_datasets", arguments: {} });
  assert.equal(res.isError, true);
  assert.match(JSON.parse(res.content[0].text).error, /API key/);
  await client.close();
});

suite("streamable HTTP", connect);

test("two clients at once see the same data through one server", async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  const args = { thread_id: fixture.thread, project_name: fixture.project, page_number: 1 };
  const [ra, rb] = await Promise.all([ok(a, "get_thread_history", args), ok(b, "get_thread_history", args)]);
  assert.deepEqual(ra, rb);
  await Promise.all([a.close(), b.close()]);
});
