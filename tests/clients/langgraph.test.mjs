// The real @langchain/langgraph-sdk (pinned in package.json), unmodified,
// against a deployment URL of the local server. clients_test.go starts the
// server, deploys a revision with graphs "agent" and "other", and runs
// `node --test langgraph.test.mjs` with:
//   AGENTPLANE_URL        {base}/deployments/{deployment_id}
//   AGENTPLANE_OTHER_URL  another deployment of the same workspace
//   AGENTPLANE_API_KEY    an API key of the workspace (sent as x-api-key)
// The thread API needs no X-Tenant-Id: the deployment names the workspace.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.AGENTPLANE_URL;
const otherUrl = process.env.AGENTPLANE_OTHER_URL;
const apiKey = process.env.AGENTPLANE_API_KEY;
if (!apiUrl || !apiKey) throw new Error("AGENTPLANE_URL and AGENTPLANE_API_KEY are required");

// maxRetries 0: a server error must fail the test, not be retried away.
const client = new Client({ apiUrl, apiKey, callerOptions: { maxRetries: 0 } });
const other = new Client({ apiUrl: otherUrl, apiKey, callerOptions: { maxRetries: 0 } });

// A run tag isolates this run's threads in searches and counts.
const run = randomUUID();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function rejects(promise, status) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, `want HTTP ${status}, got ${err.message}`);
    assert.ok(JSON.parse(err.text).detail !== undefined, `no detail in ${err.text}`);
    return true;
  });
}

// The docs example: __input__, then a human message as __start__, then an
// AI message as call_model.
const docsSupersteps = [
  { updates: [{ values: {}, asNode: "__input__" }] },
  { updates: [{ values: { messages: [{ type: "human", content: "hello" }] }, asNode: "__start__" }] },
  { updates: [{ values: { messages: [{ type: "ai", content: "Hello! How can I assist you today?" }] }, asNode: "call_model" }] },
];

function contents(values) {
  return values.messages.map((m) => [m.type, m.content]);
}

test("create with supersteps, getState, getHistory", async () => {
  const thread = await client.threads.create({ graphId: "agent", metadata: { run, case: "docs" }, supersteps: docsSupersteps });
  assert.match(thread.thread_id, UUID);
  assert.equal(thread.status, "idle");
  assert.equal(thread.metadata.graph_id, "agent");
  assert.equal(thread.metadata.run, run);
  for (const k of ["created_at", "updated_at"]) assert.ok(!Number.isNaN(Date.parse(thread[k])), k);
  assert.deepEqual(contents(thread.values), [["human", "hello"], ["ai", "Hello! How can I assist you today?"]]);
  // add_messages gives every message an id.
  for (const m of thread.values.messages) assert.equal(typeof m.id, "string");

  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(
    Object.keys(state).sort(),
    ["checkpoint", "checkpoint_id", "created_at", "metadata", "next", "parent_checkpoint", "parent_checkpoint_id", "tasks", "values"],
  );
  assert.deepEqual(state.values, thread.values);
  assert.ok(Array.isArray(state.next) && Array.isArray(state.tasks));
  assert.equal(state.checkpoint.checkpoint_id, state.checkpoint_id);
  assert.equal(state.checkpoint.thread_id, thread.thread_id);
  assert.equal(state.checkpoint.checkpoint_ns, "");
  assert.equal(state.parent_checkpoint.checkpoint_id, state.parent_checkpoint_id);
  assert.equal(state.metadata.thread_id, thread.thread_id);
  assert.equal(state.metadata.graph_id, "agent");
  assert.equal(state.metadata.source, "update");
  assert.equal(state.metadata.step, 1);
  assert.deepEqual(Object.keys(state.metadata.writes), ["call_model"]);

  // Newest first; one checkpoint per superstep; ids grow with time.
  const history = await client.threads.getHistory(thread.thread_id);
  assert.equal(history.length, 3);
  assert.deepEqual(history.map((s) => s.metadata.step), [1, 0, -1]);
  assert.deepEqual(history.map((s) => s.metadata.source), ["update", "update", "input"]);
  assert.equal(history[0].checkpoint_id, state.checkpoint_id);
  assert.equal(history[2].parent_checkpoint_id, null);
  assert.equal(history[2].parent_checkpoint, null);
  assert.deepEqual(history[2].next, ["__start__"]);
  assert.deepEqual(history[2].values, {});
  assert.deepEqual(contents(history[1].values), [["human", "hello"]]);
  for (let i = 0; i + 1 < history.length; i++) {
    assert.equal(history[i].parent_checkpoint_id, history[i + 1].checkpoint_id);
    assert.ok(history[i].checkpoint_id > history[i + 1].checkpoint_id, "checkpoint ids are time-ordered");
  }

  // limit, before (a string and a checkpoint object), metadata filter.
  assert.equal((await client.threads.getHistory(thread.thread_id, { limit: 1 })).length, 1);
  const before = await client.threads.getHistory(thread.thread_id, { before: history[0].checkpoint_id });
  assert.deepEqual(before.map((s) => s.checkpoint_id), [history[1].checkpoint_id, history[2].checkpoint_id]);
  const beforeCfg = await client.threads.getHistory(thread.thread_id, { before: { configurable: { checkpoint_id: history[1].checkpoint_id } } });
  assert.deepEqual(beforeCfg.map((s) => s.checkpoint_id), [history[2].checkpoint_id]);
  const inputs = await client.threads.getHistory(thread.thread_id, { metadata: { source: "input" } });
  assert.deepEqual(inputs.map((s) => s.checkpoint_id), [history[2].checkpoint_id]);

  // getState at a checkpoint: by id (GET) and by checkpoint object (POST).
  const at = await client.threads.getState(thread.thread_id, history[1].checkpoint_id);
  assert.deepEqual(at, history[1]);
  const atCfg = await client.threads.getState(thread.thread_id, { checkpoint_id: history[1].checkpoint_id });
  assert.deepEqual(atCfg, history[1]);
  await rejects(client.threads.getState(thread.thread_id, randomUUID()), 404);
});

test("create: thread_id, if_exists, ttl, graph_id validation", async () => {
  const id = randomUUID();
  const made = await client.threads.create({ threadId: id, metadata: { run, case: "ifexists" } });
  assert.equal(made.thread_id, id);
  assert.deepEqual(made.values, null);
  await rejects(client.threads.create({ threadId: id }), 409);
  await rejects(client.threads.create({ threadId: id, ifExists: "raise" }), 409);
  const same = await client.threads.create({ threadId: id, ifExists: "do_nothing", metadata: { ignored: true } });
  assert.equal(same.thread_id, id);
  assert.equal(same.metadata.ignored, undefined);
  // A graph the active revision does not have is rejected.
  await rejects(client.threads.create({ graphId: "nope" }), 422);
  // ttl as a number of minutes (the SDK sends {ttl, strategy: "delete"}).
  const ttl = await client.threads.create({ metadata: { run, case: "ttl" }, ttl: 60 });
  assert.equal((await client.threads.get(ttl.thread_id)).thread_id, ttl.thread_id);
  const keep = await client.threads.create({ metadata: { run, case: "ttl" }, ttl: { ttl: 5, strategy: "keep_latest" } });
  assert.equal(keep.status, "idle");
});

test("get, update, delete", async () => {
  const t = await client.threads.create({ graphId: "agent", metadata: { run, case: "update", a: 1, b: { x: 1 } } });
  const got = await client.threads.get(t.thread_id);
  assert.equal(got.thread_id, t.thread_id);
  assert.equal(got.status, "idle");
  assert.deepEqual(got.metadata, t.metadata);

  // A shallow metadata merge.
  const upd = await client.threads.update(t.thread_id, { metadata: { b: { y: 2 }, c: 3 } });
  assert.deepEqual(upd.metadata, { run, case: "update", graph_id: "agent", a: 1, b: { y: 2 }, c: 3 });
  assert.ok(upd.updated_at >= t.updated_at);
  assert.deepEqual((await client.threads.get(t.thread_id)).metadata, upd.metadata);
  await client.threads.update(t.thread_id, { ttl: 30 });
  await rejects(client.threads.update(t.thread_id, { metadata: { graph_id: "nope" } }), 422);

  // updateState with as_node writes a checkpoint.
  const before = await client.threads.getHistory(t.thread_id);
  const res = await client.threads.updateState(t.thread_id, {
    values: { messages: [{ type: "human", content: "hi", id: "m1" }], topic: "greeting" },
    asNode: "__start__",
  });
  assert.match(res.checkpoint.checkpoint_id, UUID);
  assert.equal(res.checkpoint.thread_id, t.thread_id);
  const st = await client.threads.getState(t.thread_id);
  assert.equal(st.checkpoint_id, res.checkpoint.checkpoint_id);
  assert.equal(st.values.topic, "greeting");
  // add_messages: same id replaces, a new one appends; topic overwrites.
  await client.threads.updateState(t.thread_id, {
    values: { messages: [{ type: "human", content: "hi again", id: "m1" }, { type: "ai", content: "hello", id: "m2" }], topic: "chat" },
    asNode: "call_model",
  });
  const st2 = await client.threads.getState(t.thread_id);
  assert.deepEqual(contents(st2.values), [["human", "hi again"], ["ai", "hello"]]);
  assert.equal(st2.values.topic, "chat");
  assert.deepEqual(Object.keys(st2.metadata.writes), ["call_model"]);
  assert.equal((await client.threads.getHistory(t.thread_id)).length, before.length + 2);
  // An update from an older checkpoint forks from it.
  const fork = await client.threads.updateState(t.thread_id, { values: { topic: "forked" }, asNode: "call_model", checkpointId: st.checkpoint_id });
  const forked = await client.threads.getState(t.thread_id);
  assert.equal(forked.checkpoint_id, fork.checkpoint.checkpoint_id);
  assert.equal(forked.parent_checkpoint_id, st.checkpoint_id);
  assert.deepEqual(contents(forked.values), [["human", "hi"]]);
  assert.equal((await client.threads.get(t.thread_id)).values.topic, "forked");

  assert.equal(await client.threads.delete(t.thread_id), undefined);
  await rejects(client.threads.get(t.thread_id), 404);
  await rejects(client.threads.getState(t.thread_id), 404);
  await rejects(client.threads.delete(t.thread_id), 404);
  await rejects(client.threads.get("not-a-uuid"), 422);
});

test("a thread without a graph", async () => {
  const t = await client.threads.create({ metadata: { run, case: "nograph" } });
  const st = await client.threads.getState(t.thread_id);
  assert.deepEqual(st.values, {});
  assert.deepEqual(st.next, []);
  assert.equal(st.checkpoint, null);
  assert.deepEqual(await client.threads.getHistory(t.thread_id), []);
});

test("copy, and copies of copies", async () => {
  const src = await client.threads.create({ graphId: "agent", metadata: { run, case: "copy" }, supersteps: docsSupersteps });
  const srcHistory = await client.threads.getHistory(src.thread_id);
  const copy = await client.threads.copy(src.thread_id);
  assert.notEqual(copy.thread_id, src.thread_id);
  assert.deepEqual(copy.metadata, src.metadata);
  const copyHistory = await client.threads.getHistory(copy.thread_id);
  assert.deepEqual(copyHistory.map((s) => s.checkpoint_id), srcHistory.map((s) => s.checkpoint_id));
  assert.deepEqual(copyHistory.map((s) => s.values), srcHistory.map((s) => s.values));
  for (const s of copyHistory) {
    assert.equal(s.checkpoint.thread_id, copy.thread_id);
    assert.equal(s.metadata.thread_id, copy.thread_id);
  }
  // Independent: a write to the copy does not reach the source, and back.
  await client.threads.updateState(copy.thread_id, { values: { messages: [{ type: "human", content: "only in copy" }] }, asNode: "__start__" });
  await client.threads.updateState(src.thread_id, { values: { messages: [{ type: "human", content: "only in source" }] }, asNode: "__start__" });
  const cs = await client.threads.getState(copy.thread_id);
  const ss = await client.threads.getState(src.thread_id);
  assert.equal(cs.values.messages.at(-1).content, "only in copy");
  assert.equal(ss.values.messages.at(-1).content, "only in source");
  // A copy of the copy, then the middle one deleted.
  const copy2 = await client.threads.copy(copy.thread_id);
  await client.threads.delete(copy.thread_id);
  const h2 = await client.threads.getHistory(copy2.thread_id);
  assert.equal(h2.length, srcHistory.length + 1);
  assert.equal(h2[0].values.messages.at(-1).content, "only in copy");
  await rejects(client.threads.copy(randomUUID()), 409);
});

test("search with every filter and sort, count", async () => {
  const tag = randomUUID();
  const made = [];
  for (let i = 0; i < 6; i++) {
    const supersteps = i % 2 === 0 ? docsSupersteps : undefined;
    made.push(await client.threads.create({ graphId: i % 3 === 0 ? "other" : "agent", metadata: { tag, i, parity: i % 2 }, supersteps }));
  }
  const ids = made.map((t) => t.thread_id);
  const byTag = await client.threads.search({ metadata: { tag }, limit: 100 });
  assert.equal(byTag.length, 6);
  // Default order: updated_at descending, ties by thread_id.
  assert.deepEqual(byTag.map((t) => t.thread_id), [...ids].reverse());

  assert.deepEqual((await client.threads.search({ metadata: { tag, parity: 0 } })).map((t) => t.metadata.i).sort(), [0, 2, 4]);
  assert.deepEqual((await client.threads.search({ metadata: { tag, graph_id: "other" } })).map((t) => t.metadata.i).sort(), [0, 3]);
  assert.deepEqual((await client.threads.search({ ids: [ids[1], ids[4], randomUUID()] })).map((t) => t.thread_id).sort(), [ids[1], ids[4]].sort());
  assert.equal((await client.threads.search({ metadata: { tag }, status: "idle", limit: 100 })).length, 6);
  assert.equal((await client.threads.search({ metadata: { tag }, status: "busy" })).length, 0);
  // values: exact match of the named keys (message ids differ per thread).
  const valuesHit = await client.threads.search({ metadata: { tag }, values: { messages: made[2].values.messages } });
  assert.deepEqual(valuesHit.map((t) => t.thread_id), [ids[2]]);

  // limit and offset page through the same order.
  const p1 = await client.threads.search({ metadata: { tag }, limit: 4 });
  const p2 = await client.threads.search({ metadata: { tag }, limit: 4, offset: 4 });
  assert.deepEqual([...p1, ...p2].map((t) => t.thread_id), byTag.map((t) => t.thread_id));

  const cmp = {
    thread_id: (a, b) => (a.thread_id < b.thread_id ? -1 : a.thread_id > b.thread_id ? 1 : 0),
    created_at: (a, b) => Date.parse(a.created_at) - Date.parse(b.created_at),
    updated_at: (a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at),
    state_updated_at: (a, b) => Date.parse(a.state_updated_at) - Date.parse(b.state_updated_at),
    status: (a, b) => (a.status < b.status ? -1 : a.status > b.status ? 1 : 0),
  };
  for (const sortBy of Object.keys(cmp)) {
    for (const sortOrder of ["asc", "desc"]) {
      const got = await client.threads.search({ metadata: { tag }, sortBy, sortOrder, limit: 100 });
      assert.equal(got.length, 6, `${sortBy} ${sortOrder}`);
      const sign = sortOrder === "asc" ? 1 : -1;
      for (let i = 0; i + 1 < got.length; i++) {
        const c = cmp[sortBy](got[i], got[i + 1]) || cmp.thread_id(got[i], got[i + 1]);
        assert.ok(sign * c < 0, `${sortBy} ${sortOrder}: ${got[i].thread_id} before ${got[i + 1].thread_id}`);
      }
    }
  }
  await rejects(client.threads.search({ sortBy: "nope" }), 422);
  await rejects(client.threads.search({ limit: 0 }), 422);
  await rejects(client.threads.search({ limit: 1001 }), 422);

  // select returns only the named fields.
  const sel = await client.threads.search({ metadata: { tag }, select: ["thread_id", "status"], limit: 1 });
  assert.deepEqual(Object.keys(sel[0]).sort(), ["status", "thread_id"]);

  assert.equal(await client.threads.count({ metadata: { tag } }), 6);
  assert.equal(await client.threads.count({ metadata: { tag, parity: 1 } }), 3);
  assert.equal(await client.threads.count({ metadata: { tag }, status: "idle" }), 6);
  assert.equal(await client.threads.count({ metadata: { tag }, status: "error" }), 0);
  assert.equal(await client.threads.count({ metadata: { tag }, values: { messages: made[2].values.messages } }), 1);
  await client.threads.delete(ids[0]);
  assert.equal(await client.threads.count({ metadata: { tag } }), 5);
  assert.equal((await client.threads.search({ metadata: { tag }, limit: 100 })).length, 5);
});

test("other deployments do not see this deployment's threads", async () => {
  const t = await client.threads.create({ metadata: { run, case: "isolation" } });
  await rejects(other.threads.get(t.thread_id), 404);
  await rejects(other.threads.getState(t.thread_id), 404);
  await rejects(other.threads.copy(t.thread_id), 409);
  assert.equal(await other.threads.count({ metadata: { run } }), 0);
  assert.equal((await other.threads.search({ metadata: { run } })).length, 0);
  // A wrong key is refused.
  const bad = new Client({ apiUrl, apiKey: "ap_wrong_key_000000000000000000", callerOptions: { maxRetries: 0 } });
  await rejects(bad.threads.get(t.thread_id), 401);
});
