// The pinned langsmith SDK against agentplane's tracing API (started by
// langsmith_test.go): trace a nested program with traceable, with the
// multipart body streamed and buffered, then read it all back with the
// SDK's own calls. Any server error, and any error the SDK reports while
// exporting, fails the test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "langsmith";
import { traceable, getCurrentRunTree } from "langsmith/traceable";

const base = process.env.AGENTPLANE_URL;
const apiKey = process.env.LANGSMITH_API_KEY;
const suffix = Math.random().toString(36).slice(2, 8);

// Every request the SDK makes, with its status.
const calls = [];
const recordingFetch = async (url, init) => {
  const res = await fetch(url, init);
  calls.push({ method: init?.method ?? "GET", url: String(url), status: res.status });
  return res;
};

// The SDK reports export failures on the console instead of throwing.
const sdkErrors = [];
for (const level of ["error", "warn"]) {
  const orig = console[level];
  console[level] = (...args) => {
    const text = args.map((a) => (a instanceof Error ? a.stack : String(a))).join(" ");
    if (!/deprecated|DeprecationWarning/i.test(text)) sdkErrors.push(`${level}: ${text}`);
    orig(...args);
  };
}

function client({ streaming, apiUrl = base }) {
  // Read when the client is made.
  process.env.LANGSMITH_DISABLE_MULTIPART_STREAMING = streaming ? "false" : "true";
  return new Client({
    apiUrl,
    apiKey,
    // No retries: a server error must fail, not be papered over.
    callerOptions: { maxRetries: 0 },
    fetchImplementation: recordingFetch,
    timeout_ms: 20000,
  });
}

// eventually polls until check returns a truthy value (ingest is queued).
async function eventually(what, check, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.stack}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function collect(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

// A small agent: a chain that calls a tool and an LLM (with usage), and
// fails on request. Every run carries thread_id, as the interface asks.
function program(ls, project) {
  const opts = (name, run_type, threadId) => ({ name, run_type, client: ls, project_name: project, tracingEnabled: true, metadata: { thread_id: threadId } });
  const make = (threadId) => {
    const double = traceable(async (x) => x * 2, opts("double", "tool", threadId));
    const llm = traceable(
      async (messages) => ({
        choices: [{ message: { role: "assistant", content: `echo: ${messages.at(-1).content}` } }],
        usage_metadata: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
      }),
      opts("fake-llm", "llm", threadId),
    );
    const agent = traceable(async (question, fail = false) => {
      const ids = { root: getCurrentRunTree().id, trace: getCurrentRunTree().trace_id };
      const n = await double(21);
      const out = await llm([{ role: "user", content: question }]);
      if (fail) throw new Error("the agent failed on purpose");
      return { n, answer: out.choices[0].message.content, ids };
    }, opts("agent", "chain", threadId));
    return agent;
  };
  return make;
}

test("traces a nested program and reads it back", async () => {
  const project = `sdk-${suffix}`;
  const results = [];
  for (const streaming of [true, false]) {
    const ls = client({ streaming });
    const make = program(ls, project);
    results.push(await make("thread-1")("hello"));
    results.push(await make(streaming ? "thread-1" : "thread-2")("again"));
    await assert.rejects(make("thread-2")("boom", true));
    await ls.awaitPendingTraceBatches();
  }
  const multipartCalls = calls.filter((c) => c.url.endsWith("/runs/multipart"));
  assert.ok(multipartCalls.length >= 2, `multipart requests: ${JSON.stringify(multipartCalls)}`);
  assert.ok(multipartCalls.every((c) => c.status === 202), JSON.stringify(multipartCalls));

  const ls = client({ streaming: false });
  // 6 traces of 3 runs each.
  const all = await eventually("every run", async () => {
    const runs = await collect(ls.listRuns({ projectName: project }));
    return runs.length === 18 && runs.every((r) => r.end_time) && runs;
  });
  assert.ok(all.every((r) => r.trace_id && r.dotted_order && r.session_id), "run fields");

  // listProjects, readProject, hasProject.
  const projects = await collect(ls.listProjects({ nameContains: suffix }));
  assert.equal(projects.length, 1);
  assert.equal(projects[0].name, project);
  assert.ok("reference_dataset_id" in projects[0] && projects[0].tenant_id);
  const withStats = await ls.readProject({ projectName: project, includeStats: true });
  assert.equal(withStats.run_count, 18);
  assert.equal(withStats.total_tokens, 6 * 15);
  assert.ok(withStats.latency_p50 >= 0 && withStats.latency_p99 >= withStats.latency_p50);
  assert.ok(Math.abs(withStats.error_rate - 2 / 6) < 1e-9, `error_rate ${withStats.error_rate}`);
  assert.equal(await ls.hasProject({ projectName: project }), true);
  const byName = await collect(ls.listProjects({ name: project, includeStats: true }));
  assert.equal(byName[0].run_count, 18);

  // listRuns with filters.
  const roots = await collect(ls.listRuns({ projectName: project, isRoot: true }));
  assert.equal(roots.length, 6);
  assert.ok(roots.every((r) => r.name === "agent" && !r.parent_run_id));
  const llms = await collect(ls.listRuns({ projectName: project, runType: "llm" }));
  assert.equal(llms.length, 6);
  assert.ok(llms.every((r) => r.total_tokens === 15 && r.prompt_tokens === 10));
  assert.match(llms[0].outputs.choices[0].message.content, /^echo: /);
  const errored = await collect(ls.listRuns({ projectName: project, error: true }));
  assert.equal(errored.length, 2);
  assert.match(errored[0].error, /failed on purpose/);
  const doubles = await collect(ls.listRuns({ projectName: project, filter: 'eq(name, "double")' }));
  assert.equal(doubles.length, 6);
  const thread2 = await collect(ls.listRuns({
    projectName: project,
    filter: 'and(in(metadata_key, ["session_id", "conversation_id", "thread_id"]), eq(metadata_value, "thread-2"))',
  }));
  assert.equal(thread2.length, 9);
  const slowOrTagged = await collect(ls.listRuns({ projectName: project, filter: 'or(gt(latency, "1h"), eq(run_type, "tool"))' }));
  assert.equal(slowOrTagged.length, 6);
  const limited = await collect(ls.listRuns({ projectName: project, limit: 5 }));
  assert.equal(limited.length, 5);
  const firstTrace = results[0].ids.trace;
  const traceRuns = await collect(ls.listRuns({ traceId: firstTrace }));
  assert.equal(traceRuns.length, 3);
  const inFailedTraces = await collect(ls.listRuns({ projectName: project, filter: 'eq(run_type, "llm")', traceFilter: "neq(error, null)" }));
  assert.equal(inFailedTraces.length, 2);
  const treeWithError = await collect(ls.listRuns({ projectName: project, isRoot: true, treeFilter: 'neq(error, null)' }));
  assert.equal(treeWithError.length, 2);

  // readRun, with its child runs.
  const root = await ls.readRun(results[0].ids.root, { loadChildRuns: true });
  assert.equal(root.name, "agent");
  assert.deepEqual(root.inputs, { input: "hello" });
  assert.equal(root.outputs.answer, "echo: hello");
  assert.equal(root.child_runs.length, 2);
  assert.deepEqual(root.child_runs.map((r) => r.name).sort(), ["double", "fake-llm"]);

  // createFeedback: queued as a multipart part (with a trace id) and
  // posted directly (without).
  const llmRun = llms.find((r) => r.trace_id === firstTrace);
  await ls.createFeedback(llmRun.id, "correctness", { score: 1, traceId: firstTrace, comment: "right" });
  await ls.createFeedback(results[0].ids.root, "helpfulness", { score: 0.5, sessionId: root.session_id });
  await ls.awaitPendingTraceBatches();
  const feedback = await eventually("feedback", async () => {
    const fb = await collect(ls.listFeedback({ runIds: [llmRun.id, results[0].ids.root] }));
    return fb.length === 2 && fb;
  });
  assert.deepEqual(feedback.map((f) => f.key).sort(), ["correctness", "helpfulness"]);
  const scored = await eventually("feedback in the project stats", async () => {
    const p = await ls.readProject({ projectName: project, includeStats: true });
    return p.feedback_stats?.correctness && p.feedback_stats?.helpfulness && p;
  });
  assert.equal(scored.feedback_stats.correctness.avg, 1);
  const byFeedback = await collect(ls.listRuns({ projectName: project, filter: 'and(eq(feedback_key, "correctness"), eq(feedback_score, 1))' }));
  assert.deepEqual(byFeedback.map((r) => r.id), [llmRun.id]);

  // listThreads groups root runs by thread_id.
  const threads = await ls.listThreads({ projectName: project });
  const byThread = Object.fromEntries(threads.map((t) => [t.thread_id, t.count]));
  assert.deepEqual(byThread, { "thread-1": 3, "thread-2": 3 });
  const threadRuns = await collect(ls.readThread({ threadId: "thread-1", projectName: project }));
  assert.equal(threadRuns.length, 3);

  // getRunStats.
  const stats = await ls.getRunStats({ projectNames: [project], runType: "llm" });
  assert.equal(stats.run_count, 6);
  assert.equal(stats.total_tokens, 90);
});

test("works with the endpoint under /api/v1", async () => {
  const ls = client({ streaming: true, apiUrl: `${base}/api/v1` });
  const project = `sdk-v1-${suffix}`;
  const make = program(ls, project);
  const out = await make("thread-v1")("under api v1");
  await ls.awaitPendingTraceBatches();
  const runs = await eventually("runs under /api/v1", async () => {
    const r = await collect(ls.listRuns({ projectName: project }));
    return r.length === 3 && r;
  });
  assert.ok(runs.some((r) => r.id === out.ids.root));
  const created = await ls.createProject({ projectName: `made-${suffix}`, description: "by the SDK", metadata: { a: 1 } });
  assert.equal(created.name, `made-${suffix}`);
  const updated = await ls.updateProject(created.id, { description: "changed" });
  assert.equal(updated.description, "changed");
  await ls.deleteProject({ projectId: created.id });
  assert.equal(await ls.hasProject({ projectName: `made-${suffix}` }), false);
});

test("no server errors and no export errors", () => {
  const serverErrors = calls.filter((c) => c.status >= 500);
  assert.deepEqual(serverErrors, []);
  assert.deepEqual(sdkErrors, []);
  const paths = new Set(calls.map((c) => `${c.method} ${new URL(c.url).pathname.replace(/[0-9a-f-]{36}/g, "{id}")}`));
  console.log(`SDK calls: ${[...paths].sort().join(", ")}`);
});
