// The four documentation tools (create_dataset, update_examples,
// push_prompt, run_experiment) answer guides to this platform's REST API.
// This script does what each guide says, with the request bodies exactly
// as the guide prints them (only names made unique and placeholders
// filled), then reads the result back through the data tools: a guide
// whose paths or bodies the API refused, or whose result the tools cannot
// see, fails here. It runs last: it adds a trace, which the other
// scripts' exact billing checks do not expect.
//   MCP_URL, API_URL, SERVICE_API_KEY, FIXTURE_FILE
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { fx, ok, call } from "./mcp_suite.mjs";
import { eventually } from "./lib.mjs";

const apiURL = process.env.API_URL;
const key = process.env.SERVICE_API_KEY;
const rnd = randomUUID().slice(0, 8);

let client;
test("connect", async () => {
  client = new Client({ name: "agentplane-e2e-guides", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL + "/mcp"), { requestInit: { headers: { "SERVICE-API-KEY": key } } }));
});

// steps are the guide's requests that carry a JSON body:
// `METHOD {endpoint}/path` followed by a ```json block.
async function steps(tool) {
  const { value: text, isError } = await call(client, tool, {});
  assert.equal(isError, false);
  const out = [];
  for (const m of text.matchAll(/`(POST|PATCH|PUT) ([^`]+)`[^`]*```json\n([\s\S]*?)```/g)) {
    assert.ok(m[2].startsWith(apiURL + "/"), `${tool}: ${m[2]} is not at ${apiURL}`);
    out.push({ method: m[1], path: m[2].slice(apiURL.length), body: JSON.parse(m[3]) });
  }
  assert.ok(out.length > 0, `${tool}: no REST steps`);
  return out;
}

// fill replaces placeholder and example-name strings anywhere in v.
function fill(v, subst) {
  if (typeof v === "string") {
    for (const [from, to] of Object.entries(subst)) v = v.split(from).join(to);
    return v;
  }
  if (Array.isArray(v)) return v.map((x) => fill(x, subst));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x, subst)]));
  return v;
}

async function api(method, path, body) {
  const res = await fetch(apiURL + path, {
    method, headers: { "X-API-Key": key, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const dataset = `guide-questions-${rnd}`;
let datasetId, exampleId, exampleBody;

test("create_dataset: the guide's REST steps make a dataset the tools read", async () => {
  const s = await steps("create_dataset");
  assert.deepEqual(s.map((x) => `${x.method} ${x.path}`), ["POST /datasets", "POST /examples"]);
  const subst = { "support-questions": dataset };
  const ds = await api("POST", s[0].path, fill(s[0].body, subst));
  datasetId = ds.id;
  exampleBody = fill(s[1].body, { ...subst, "<dataset id>": datasetId });
  exampleId = (await api("POST", s[1].path, exampleBody)).id;

  const read = await ok(client, "read_dataset", { dataset_name: dataset });
  assert.equal(read.dataset.id, datasetId);
  assert.equal(read.dataset.description, s[0].body.description);
  assert.equal(read.dataset.example_count, 1);
  const { examples } = await ok(client, "list_examples", { dataset_name: dataset, splits: exampleBody.split });
  assert.deepEqual(examples.map((e) => [e.id, e.inputs, e.outputs]), [[exampleId, exampleBody.inputs, exampleBody.outputs]]);
});

test("update_examples: the guide's PATCH makes a new version; the old one stays readable", async () => {
  const s = await steps("update_examples");
  assert.deepEqual(s.map((x) => `${x.method} ${x.path}`), ["PATCH /examples/<example id>"]);
  const before = (await ok(client, "read_example", { example_id: exampleId })).example;
  await api(s[0].method, s[0].path.replace("<example id>", exampleId), s[0].body);
  const after = (await ok(client, "read_example", { example_id: exampleId })).example;
  assert.deepEqual(after.outputs, s[0].body.outputs);
  assert.deepEqual(after.inputs, exampleBody.inputs, "fields not sent are kept");
  for (const [k, v] of Object.entries(s[0].body.metadata)) assert.deepEqual(after.metadata[k], v);
  const old = (await ok(client, "read_example", { example_id: exampleId, as_of: before.modified_at })).example;
  assert.deepEqual(old.outputs, exampleBody.outputs);
  const split = (await ok(client, "list_examples", { dataset_id: datasetId, splits: s[0].body.split })).examples;
  assert.deepEqual(split.map((e) => e.id), [exampleId]);
});

test("push_prompt: the guide's repository and commit are what get_prompt_by_name reads", async () => {
  const s = await steps("push_prompt");
  assert.deepEqual(s.map((x) => `${x.method} ${x.path}`), ["POST /repos/", "POST /commits/-/support-answer"]);
  const handle = `guide-answer-${rnd}`;
  const subst = { "support-answer": handle };
  await api("POST", s[0].path, fill(s[0].body, subst));
  const commit = await api("POST", s[1].path.replace("support-answer", handle), s[1].body);
  const p = await ok(client, "get_prompt_by_name", { prompt_name: handle });
  assert.equal(p.metadata.lc_hub_commit_hash, commit.commit.commit_hash);
  const templates = s[1].body.manifest.kwargs.messages.map((m) => m.kwargs.prompt.kwargs.template);
  assert.deepEqual(p.messages.map((m) => m.prompt.template), templates);
  const listed = (await ok(client, "list_prompts", { limit: 100 })).prompts.find((x) => x.repo_handle === handle);
  assert.equal(listed.description, s[0].body.description);
});

test("run_experiment: the guide's project, a run against the example, its feedback: list_experiments shows them", async () => {
  const s = await steps("run_experiment");
  assert.deepEqual(s.map((x) => `${x.method} ${x.path}`), ["POST /sessions", "POST /feedback"]);
  const name = `${s[0].body.name}-${rnd}`;
  const project = await api("POST", s[0].path, fill(s[0].body, { [s[0].body.name]: name, "<dataset id>": datasetId }));
  // Step 3 of the guide, in the fields it lists, over /runs/batch.
  const runId = randomUUID();
  const start = new Date(Date.now() - 1500);
  const dotted = start.toISOString().replace(/[-:.]/g, "").replace("Z", "000Z") + runId;
  await api("POST", "/runs/batch", {
    post: [{ id: runId, trace_id: runId, dotted_order: dotted, name: "target", run_type: "chain", start_time: start.toISOString(),
      inputs: exampleBody.inputs, session_name: name, reference_example_id: exampleId }],
    patch: [{ id: runId, trace_id: runId, dotted_order: dotted, end_time: new Date().toISOString(), outputs: { answer: "Use the link." } }],
  });
  await eventually("the run", async () => (await ok(client, "fetch_runs", { project_name: name, limit: 5, page_number: 1, reference_example_id: exampleId })).runs.length === 1);
  await api("POST", s[1].path, fill(s[1].body, { "<run id>": runId }));
  const e = await eventually("the experiment's statistics", async () => {
    const { experiments } = await ok(client, "list_experiments", { reference_dataset_name: dataset });
    return experiments.length === 1 && experiments[0].feedback_stats?.[s[1].body.key] && experiments[0];
  });
  assert.equal(e.name, name);
  assert.equal(e.experiment_id, project.id);
  assert.deepEqual(e.feedback_stats[s[1].body.key], { n: 1, avg: s[1].body.score });
  assert.ok(Math.abs(e.latency_p50_seconds - 1.5) < 0.1, `latency ${e.latency_p50_seconds}`);
  // The seeded dataset's experiments are unchanged.
  assert.deepEqual((await ok(client, "list_experiments", { reference_dataset_id: fx.dataset_id })).experiments.map((x) => x.name), [fx.experiment]);
});

test("close", async () => {
  await client.close();
});
