// The pinned MCP TypeScript SDK over stdio: it starts the real
// `agentplane mcp --stdio` (AGENTPLANE_BIN), which reads its credentials
// from SERVICE_API_KEY, SERVICE_WORKSPACE_ID and SERVICE_ENDPOINT.
//   AGENTPLANE_BIN, SERVICE_API_KEY, SERVICE_ENDPOINT, FIXTURE_FILE
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { suite, fx, ok, call, tally } from "./mcp_suite.mjs";

const endpoint = process.env.SERVICE_ENDPOINT;

function serverEnv(overrides = {}) {
  // Only what the server needs: no AGENTPLANE_URL, so SERVICE_ENDPOINT is
  // the only way it can find the platform.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, SERVICE_API_KEY: process.env.SERVICE_API_KEY, SERVICE_ENDPOINT: endpoint, AGENTPLANE_LOG_LEVEL: "warn" };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

const stderr = [];
async function connect(env = serverEnv()) {
  const client = new Client({ name: "agentplane-e2e-stdio", version: "1.0.0" });
  const transport = new StdioClientTransport({ command: process.env.AGENTPLANE_BIN, args: ["mcp", "--stdio"], env, stderr: "pipe" });
  transport.stderr?.on("data", (d) => stderr.push(String(d)));
  await client.connect(transport);
  return client;
}

suite("stdio", connect, { endpoint });

test("stdio: without SERVICE_API_KEY the data tools fail clearly, the documentation tools work", async () => {
  const client = await connect(serverEnv({ SERVICE_API_KEY: undefined }));
  const { value, isError } = await call(client, "list_prompts", {});
  assert.equal(isError, true);
  assert.match(value.error, /SERVICE_API_KEY/);
  const doc = await call(client, "run_experiment", {});
  assert.equal(doc.isError, false);
  await client.close();
});

test("stdio: a wrong key is a tool error, and the process keeps serving", async () => {
  const client = await connect(serverEnv({ SERVICE_API_KEY: "ap_not_a_real_key_000000000000000" }));
  for (let i = 0; i < 2; i++) {
    const { value, isError } = await call(client, "get_thread_history", { thread_id: fx.thread, project_name: fx.project, page_number: 1 });
    assert.equal(isError, true);
    assert.match(value.error, /refused the API key: 401/);
  }
  assert.deepEqual((await client.listTools()).tools.length, 15);
  await client.close();
});

test("stdio: SERVICE_WORKSPACE_ID names the workspace; the platform under /api/v1 works too", async () => {
  const client = await connect(serverEnv({ SERVICE_WORKSPACE_ID: fx.workspace_id, SERVICE_ENDPOINT: `${endpoint}/api/v1` }));
  assert.equal((await ok(client, "read_dataset", { dataset_name: fx.dataset })).dataset.id, fx.dataset_id);
  await client.close();
});

test("stdio: without SERVICE_ENDPOINT the endpoint is AGENTPLANE_URL (agentplane mcp's --url)", async () => {
  const client = await connect(serverEnv({ SERVICE_ENDPOINT: undefined, AGENTPLANE_URL: endpoint }));
  assert.equal((await ok(client, "read_example", { example_id: fx.examples.reset, as_of: fx.version_tag })).example.outputs.answer, fx.reset_outputs_v1.answer);
  const guide = (await call(client, "create_dataset", {})).text;
  assert.ok(guide.includes(`${endpoint}/datasets`), "the guide names another endpoint");
  await client.close();
});

test("stdio: the server wrote no error to stderr", () => {
  const text = stderr.join("");
  assert.ok(!/"level":"ERROR"|panic/.test(text), text);
  assert.ok(!text.includes(process.env.SERVICE_API_KEY), "the key was logged");
});

after(() => console.log(`MCP calls over stdio by tool: ${JSON.stringify(tally)}`));
