// The pinned MCP TypeScript SDK over streamable HTTP against the local
// server's tool server port.
//   MCP_URL          the tool server (without /mcp)
//   SERVICE_API_KEY  the key the seed used
//   API_URL          the platform API (the tool server's default endpoint)
//   FIXTURE_FILE     the seed's fixture
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { suite, fx, ok, call, historyWalk, tally } from "./mcp_suite.mjs";

const base = process.env.MCP_URL;
const apiURL = process.env.API_URL;
const key = process.env.SERVICE_API_KEY;

async function connect(headers = { "SERVICE-API-KEY": key }) {
  const client = new Client({ name: "agentplane-e2e-http", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp"), { requestInit: { headers } }));
  return client;
}

const rpc = (headers, body) =>
  fetch(base + "/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });

test("GET /health answers without a key", async () => {
  const res = await fetch(base + "/health");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/plain/);
});

test("a request without SERVICE-API-KEY is a 401 JSON error", async () => {
  for (const body of [
    { jsonrpc: "2.0", id: 1, method: "tools/list" },
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_datasets", arguments: {} } },
  ]) {
    const res = await rpc({}, body);
    assert.equal(res.status, 401);
    assert.match(res.headers.get("content-type"), /^application\/json/);
    assert.deepEqual(await res.json(), { detail: "Missing SERVICE-API-KEY header" });
  }
  // The SDK's client sees the refusal at connect.
  await assert.rejects(connect({}), (err) => err.code === 401 && /Missing SERVICE-API-KEY/.test(err.message));
});

test("a wrong key is a tool error (isError), not a crash; the server keeps serving", async () => {
  const client = await connect({ "SERVICE-API-KEY": "ap_not_a_real_key_000000000000000" });
  for (const [tool, args] of [
    ["list_datasets", {}],
    ["get_thread_history", { thread_id: fx.thread, project_name: fx.project, page_number: 1 }],
    ["get_billing_usage", { starting_on: fx.usage_from, ending_before: fx.usage_to }],
  ]) {
    const { value, isError } = await call(client, tool, args);
    assert.equal(isError, true, `${tool}: ${JSON.stringify(value)}`);
    assert.match(value.error, /refused the API key: 401/);
  }
  // The documentation tools need no platform call.
  assert.equal((await call(client, "run_experiment", {})).isError, false);
  await client.close();
  const good = await connect();
  assert.equal((await ok(good, "read_dataset", { dataset_id: fx.dataset_id })).dataset.name, fx.dataset);
  await good.close();
});

test("a workspace the key does not reach is a tool error", async () => {
  const client = await connect({ "SERVICE-API-KEY": key, "SERVICE-WORKSPACE-ID": "00000000-0000-4000-8000-000000000000" });
  const { value, isError } = await call(client, "list_datasets", {});
  assert.equal(isError, true);
  assert.match(value.error, /40[34]/);
  await client.close();
  const named = await connect({ "SERVICE-API-KEY": key, "SERVICE-WORKSPACE-ID": fx.workspace_id });
  assert.equal((await ok(named, "read_dataset", { dataset_id: fx.dataset_id })).dataset.id, fx.dataset_id);
  await named.close();
});

test("the server is stateless: no session id; GET /mcp is 405", async () => {
  const res = await rpc({ "SERVICE-API-KEY": key }, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("mcp-session-id"), null);
  // A tools/call without initialize, as another process would receive it.
  const direct = await rpc({ "SERVICE-API-KEY": key }, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "read_dataset", arguments: { dataset_id: fx.dataset_id } } });
  assert.equal(direct.status, 200);
  assert.equal((await direct.json()).result.structuredContent.dataset.name, fx.dataset);
  const get = await fetch(base + "/mcp", { headers: { accept: "text/event-stream", "SERVICE-API-KEY": key } });
  assert.equal(get.status, 405);
});

test("a browser-based client (another origin, as the MCP Inspector) passes the preflight and is answered", async () => {
  const origin = "http://localhost:6274";
  const pre = await fetch(base + "/mcp", { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type,service-api-key,mcp-protocol-version" } });
  assert.ok(pre.status === 204 || pre.status === 200, `preflight ${pre.status}`);
  assert.equal(pre.headers.get("access-control-allow-origin"), "*");
  assert.match(pre.headers.get("access-control-allow-headers") ?? "", /service-api-key/i);
  const res = await rpc({ "SERVICE-API-KEY": key, origin }, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "read_dataset", arguments: { dataset_id: fx.dataset_id } } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("access-control-allow-origin"), "*");
  assert.equal((await res.json()).result.structuredContent.dataset.id, fx.dataset_id);
});

test("the tool server answers at http://localhost:<port>/mcp too (the Host a desktop client's configuration names)", async () => {
  const u = new URL(base);
  const client = new Client({ name: "agentplane-e2e-http-localhost", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://localhost:${u.port}/mcp`), { requestInit: { headers: { "SERVICE-API-KEY": key } } }));
  assert.equal((await ok(client, "read_dataset", { dataset_id: fx.dataset_id })).dataset.name, fx.dataset);
  await client.close();
});

suite("streamable HTTP", connect, { endpoint: apiURL });

test("SERVICE-ENDPOINT per request: the same answers over the network, at the base and under /api/v1", async () => {
  const inProcess = await connect();
  const want = await ok(inProcess, "list_examples", { dataset_id: fx.dataset_id, as_of: fx.version_tag });
  await inProcess.close();
  const u = new URL(apiURL);
  for (const endpoint of [`http://localhost:${u.port}`, `http://localhost:${u.port}/api/v1`]) {
    const client = await connect({ "SERVICE-API-KEY": key, "SERVICE-ENDPOINT": endpoint });
    assert.deepEqual(await ok(client, "list_examples", { dataset_id: fx.dataset_id, as_of: fx.version_tag }), want);
    assert.equal((await historyWalk(client, 6000)) >= 5, true);
    const guide = await ok(client, "push_prompt", {});
    assert.ok(guide.includes(`${endpoint}/`), `the guide does not name ${endpoint}`);
    await client.close();
  }
});

test("concurrent clients walk the history at once and see the same pages", async () => {
  const clients = await Promise.all([1, 2, 3, 4].map(() => connect()));
  const args = { thread_id: fx.thread, project_name: fx.project, preview_chars: 0, max_chars_per_page: 5000 };
  const first = await ok(clients[0], "get_thread_history", { ...args, page_number: 1 });
  const pages = await Promise.all(clients.map(async (c) => {
    const out = [];
    for (let p = 1; p <= first.total_pages; p++) out.push(...(await ok(c, "get_thread_history", { ...args, page_number: p })).result);
    return out;
  }));
  for (const p of pages) assert.deepEqual(p, fx.messages);
  await Promise.all(clients.map((c) => c.close()));
});

after(() => console.log(`MCP calls over streamable HTTP by tool: ${JSON.stringify(tally)}`));
