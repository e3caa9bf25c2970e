// The official MCP TypeScript SDK over stdio: it starts the server command.
// Environment: STDIO_COMMAND (and STDIO_ARGS, a JSON array), SERVICE_API_KEY,
// SERVICE_ENDPOINT, optional SERVICE_WORKSPACE_ID, FIXTURE.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { suite } from "./suite.mjs";

function serverEnv(overrides = {}) {
  const env = {};
  for (const k of ["SERVICE_API_KEY", "SERVICE_WORKSPACE_ID", "SERVICE_ENDPOINT"]) {
    if (process.env[k]) env[k] = process.env[k];
  }
  return { ...env, ...overrides };
}

async function connect(env = serverEnv()) {
  const client = new Client({ name: "agentplane-mcp-stdio-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({
    command: process.env.STDIO_COMMAND,
    args: JSON.parse(process.env.STDIO_ARGS ?? "[]"),
    env,
    stderr: "inherit",
  }));
  return client;
}

suite("stdio", connect);

test("without SERVICE_API_KEY the data tools fail clearly, the documentation tools work", async () => {
  const env = serverEnv();
  delete env.SERVICE_API_KEY;
  const client = await connect(env);
  const res = await client.callTool({ name: "list_prompts", arguments: {} });
  assert.equal(res.isError, true);
  assert.match(JSON.parse(res.content[0].text).error, /SERVICE_API_KEY/);
  const doc = await client.callTool({ name: "run_experiment", arguments: {} });
  assert.notEqual(doc.isError, true);
  await client.close();
});
