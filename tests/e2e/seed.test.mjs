// Seeds the local server with the pinned langsmith SDK, exactly as a user
// would, checking each step with the SDK's own reads, then writes what it
// made to FIXTURE_OUT for the MCP clients (mcp_*.test.mjs).
//   AGENTPLANE_URL      the platform API ({base})
//   AGENTPLANE_API_KEY  a key of the (only) workspace
//   FIXTURE_OUT         where to write the fixture (JSON)
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { Client } from "langsmith";
import { traceable, getCurrentRunTree } from "langsmith/traceable";
import { evaluate } from "langsmith/evaluation";
import { collect, eventually, sleep, threadMessages, recorder, consoleErrors, noServerErrors } from "./lib.mjs";

const base = process.env.AGENTPLANE_URL;
const apiKey = process.env.AGENTPLANE_API_KEY;
if (!base || !apiKey || !process.env.FIXTURE_OUT) throw new Error("AGENTPLANE_URL, AGENTPLANE_API_KEY and FIXTURE_OUT are required");

const { calls, fetchImpl } = recorder();
const sdkErrors = consoleErrors();
const ls = new Client({ apiUrl: base, apiKey, callerOptions: { maxRetries: 0 }, fetchImplementation: fetchImpl, timeout_ms: 30000 });
const suffix = randomUUID().slice(0, 8);

// Everything the MCP clients check against.
const fx = { suffix, api_url: base };

const TURNS = 45;
const RESEARCH_STEPS = 30;
// usage of every fake model call: tokens and costs (dollars)
const USAGE = { input_tokens: 12, output_tokens: 20, total_tokens: 32, input_cost: 0.00012, output_cost: 0.0004, total_cost: 0.00052 };

test("tracing: a long conversation with thread_id, errors, a deep trace, feedback (traceable, createFeedback, listRuns, listFeedback, readProject)", async () => {
  const project = `support-bot-${suffix}`;
  const thread = `conv-${suffix}`;
  const shortThread = `conv-${suffix}-short`;
  const opts = (name, run_type, threadId, extra = {}) => ({
    name, run_type, client: ls, project_name: project, tracingEnabled: true, metadata: { thread_id: threadId }, ...extra,
  });
  const expected = threadMessages(thread, TURNS);

  // The model sees the new user message and answers with the next
  // assistant message; the parent "turn" run carries the thread too.
  const model = traceable(async ({ messages }) => {
    const turn = Number(/ user (\d+): /.exec(messages[0].content)[1]);
    return { choices: [{ message: expected[2 * turn + 1] }], usage_metadata: USAGE };
  }, opts("chat-model", "llm", thread));
  const turn = traceable(async (i) => {
    const out = await model({ messages: [expected[2 * i]] });
    return { reply: out.choices[0].message.content, run_id: getCurrentRunTree().id };
  }, opts("turn", "chain", thread));
  const turnRuns = [];
  for (let i = 0; i < TURNS; i++) {
    turnRuns.push((await turn(i)).run_id);
    await sleep(3); // distinct start times: the history is ordered by them
  }

  // Two traces that fail in a tool, on another thread.
  const search = traceable(async (q) => {
    throw new Error(`search backend unavailable for ${q}`);
  }, opts("search", "tool", shortThread));
  const agent = traceable(async (q) => {
    fx.error_trace_ids = [...(fx.error_trace_ids ?? []), getCurrentRunTree().trace_id];
    return await search(q);
  }, opts("agent", "chain", shortThread));
  await assert.rejects(agent("refund policy"), /search backend unavailable/);
  await assert.rejects(agent("shipping times"), /search backend unavailable/);

  // One deep trace: a root and RESEARCH_STEPS tool runs with long outputs.
  const lookup = traceable(async (i) => ({ step: i, notes: `note ${i}: ` + "x".repeat(400 + i * 10) }), opts("lookup", "tool", shortThread));
  const research = traceable(async () => {
    for (let i = 0; i < RESEARCH_STEPS; i++) await lookup(i);
    return { trace_id: getCurrentRunTree().trace_id };
  }, opts("research", "chain", shortThread));
  const { trace_id: researchTrace } = await research();
  await ls.awaitPendingTraceBatches();

  const total = TURNS * 2 + 2 * 2 + 1 + RESEARCH_STEPS;
  const runs = await eventually("every run ingested", async () => {
    const rs = await collect(ls.listRuns({ projectName: project }));
    return rs.length === total && rs.every((r) => r.end_time) && rs;
  });
  const byName = (n) => runs.filter((r) => r.name === n);
  assert.equal(byName("chat-model").length, TURNS);
  for (const r of [...byName("turn"), ...byName("chat-model")]) {
    assert.equal(r.extra?.metadata?.thread_id, thread, `run ${r.name} ${r.id} lacks thread_id`);
  }
  const errored = await collect(ls.listRuns({ projectName: project, error: true }));
  assert.equal(errored.length, 4);
  const traced = await collect(ls.listRuns({ projectName: project, traceId: researchTrace }));
  assert.equal(traced.length, RESEARCH_STEPS + 1);

  // Feedback on three turns and on a failed run, in each of the SDK's
  // ways: with the project and trace (a multipart part of the trace
  // batch), with the project (POST /feedback with run_id and session_id),
  // and with the run alone (the older call).
  const sessionId = runs[0].session_id;
  const scores = [1, 0.5, 0];
  const ways = [{ sessionId, traceId: turnRuns[0] }, { sessionId }, {}];
  for (let i = 0; i < scores.length; i++) {
    await ls.createFeedback(turnRuns[i], "helpfulness", { score: scores[i], comment: `turn ${i}`, ...ways[i] });
  }
  const failedRoot = errored.find((r) => r.name === "agent");
  await ls.createFeedback(failedRoot.id, "user_score", { score: 0, comment: "wrong answer", sessionId });
  await ls.awaitPendingTraceBatches();
  const feedback = await eventually("feedback", async () => {
    const fb = await collect(ls.listFeedback({ runIds: [...turnRuns.slice(0, 3), failedRoot.id] }));
    return fb.length === 4 && fb;
  });
  assert.deepEqual(feedback.filter((f) => f.key === "helpfulness").map((f) => f.score).sort(), [0, 0.5, 1]);
  const stats = await eventually("project statistics", async () => {
    const p = await ls.readProject({ projectName: project, includeStats: true });
    return p.run_count === total && p.feedback_stats?.helpfulness?.n === 3 && p;
  });
  assert.equal(stats.total_tokens, TURNS * USAGE.total_tokens);
  assert.equal(stats.feedback_stats.user_score.n, 1);

  Object.assign(fx, {
    project, project_id: stats.id, thread, short_thread: shortThread, turns: TURNS, messages: expected,
    run_count: total, root_count: TURNS + 2 + 1, llm_count: TURNS, error_count: 4,
    research_trace: researchTrace, research_runs: RESEARCH_STEPS + 1, turn_run: turnRuns[0],
    project_total_tokens: stats.total_tokens,
  });
});

test("datasets: versions by an edit and a delete, a tag, splits (createDataset, createExamples, updateExample, deleteExample, updateDatasetTag, listExamples asOf/splits, readExample, readDataset, listDatasets, listDatasetSplits, readDatasetVersion)", async () => {
  const name = `support-qa-${suffix}`;
  const inputsSchema = { type: "object", properties: { question: { type: "string" } }, required: ["question"] };
  const outputsSchema = { type: "object", properties: { answer: { type: "string" } } };
  const ds = await ls.createDataset(name, { description: "Support questions and answers", dataType: "kv", metadata: { team: "support", suffix }, inputsSchema, outputsSchema });
  const questions = ["How do I reset my password?", "Where are my invoices?", "Can I change my plan?", "Do you ship to Norway?"];
  const answers = ["Ask support.", "Billing > Invoices.", "Yes, in Settings > Plan.", "Yes, in 5 days."];
  const created = await ls.createExamples({
    datasetId: ds.id,
    inputs: questions.map((question) => ({ question })),
    outputs: answers.map((answer) => ({ answer })),
    metadata: questions.map((_, i) => ({ order: i })),
    splits: ["train", "test", "train", ["test", "validation"]],
  });
  assert.equal(created.length, 4);
  const byQ = Object.fromEntries(created.map((e) => [e.inputs.question, e]));
  const [reset, invoices, plan, norway] = questions.map((q) => byQ[q]);
  const v1 = reset.modified_at;

  await sleep(5);
  const edited = { answer: "Use the 'Forgot password' link." };
  await ls.updateExample(reset.id, { inputs: { question: questions[0] }, outputs: edited, metadata: { order: 0, edited: true }, split: ["train"] });
  const v2 = (await ls.readExample(reset.id)).modified_at;
  assert.notEqual(v2, v1);
  await sleep(5);
  await ls.deleteExample(invoices.id);
  await ls.updateDatasetTag({ datasetId: ds.id, asOf: v1, tag: "initial" });

  const ids = (xs) => xs.map((e) => e.id).sort();
  const now = await collect(ls.listExamples({ datasetId: ds.id }));
  assert.deepEqual(ids(now), ids([reset, plan, norway]));
  assert.deepEqual(now.find((e) => e.id === reset.id).outputs, edited);
  const atV1 = await collect(ls.listExamples({ datasetId: ds.id, asOf: v1 }));
  assert.deepEqual(ids(atV1), ids(created));
  assert.deepEqual(atV1.find((e) => e.id === reset.id).outputs, { answer: answers[0] });
  assert.deepEqual(ids(await collect(ls.listExamples({ datasetId: ds.id, asOf: "initial" }))), ids(created));
  assert.deepEqual(ids(await collect(ls.listExamples({ datasetId: ds.id, asOf: v2 }))), ids(created));
  assert.deepEqual(ids(await collect(ls.listExamples({ datasetId: ds.id, splits: ["train"] }))), ids([reset, plan]));
  assert.deepEqual(ids(await collect(ls.listExamples({ datasetId: ds.id, splits: ["test"] }))), ids([norway]));
  assert.deepEqual(ids(await collect(ls.listExamples({ datasetId: ds.id, splits: ["test"], asOf: v1 }))), ids([invoices, norway]));
  assert.deepEqual((await ls.readExample(reset.id)).outputs, edited);
  assert.deepEqual(await ls.listDatasetSplits({ datasetId: ds.id }), ["test", "train", "validation"]);
  const version = await ls.readDatasetVersion({ datasetId: ds.id, tag: "initial" });
  assert.equal(version.as_of, v1);
  const read = await ls.readDataset({ datasetName: name });
  assert.equal(read.id, ds.id);
  assert.equal(read.example_count, 3);
  assert.ok((await collect(ls.listDatasets({ datasetNameContains: suffix }))).some((d) => d.id === ds.id));

  Object.assign(fx, {
    dataset: name, dataset_id: ds.id, dataset_description: "Support questions and answers", dataset_metadata: { team: "support", suffix },
    inputs_schema: inputsSchema, outputs_schema: outputsSchema,
    version_tag: "initial", v1, v2,
    examples: { reset: reset.id, invoices: invoices.id, plan: plan.id, norway: norway.id },
    reset_outputs_v1: { answer: answers[0] }, reset_outputs_now: edited,
    current_example_ids: ids([reset, plan, norway]), v1_example_ids: ids(created),
    train_now: ids([reset, plan]), test_v1: ids([invoices, norway]), splits: ["test", "train", "validation"],
  });
});

test("prompts: one prompt pushed twice, a public one by its owner-qualified name (pushPrompt, pullPromptCommit, listPrompts, listCommits, getPrompt)", async () => {
  const name = `support-answer-${suffix}`;
  const manifest = (system) => ({
    lc: 1, type: "constructor", id: ["langchain", "prompts", "chat", "ChatPromptTemplate"],
    kwargs: {
      input_variables: ["question"],
      messages: [
        { lc: 1, type: "constructor", id: ["langchain", "prompts", "chat", "SystemMessagePromptTemplate"],
          kwargs: { prompt: { lc: 1, type: "constructor", id: ["langchain", "prompts", "prompt", "PromptTemplate"],
            kwargs: { input_variables: [], template: system, template_format: "f-string" } } } },
        { lc: 1, type: "constructor", id: ["langchain", "prompts", "chat", "HumanMessagePromptTemplate"],
          kwargs: { prompt: { lc: 1, type: "constructor", id: ["langchain", "prompts", "prompt", "PromptTemplate"],
            kwargs: { input_variables: ["question"], template: "{question}", template_format: "f-string" } } } },
      ],
    },
  });
  const first = "You answer support questions politely.";
  const second = "You answer support questions politely and briefly, in the user's language.";
  await ls.pushPrompt(name, { object: manifest(first), description: "Answers support questions" });
  const c1 = await ls.pullPromptCommit(name, { skipCache: true });
  await ls.pushPrompt(name, { object: manifest(second) });
  const c2 = await ls.pullPromptCommit(name, { skipCache: true });
  assert.notEqual(c1.commit_hash, c2.commit_hash);
  assert.deepEqual(c2.manifest, manifest(second));
  const commits = await collect(ls.listCommits(name));
  assert.deepEqual(commits.map((c) => c.commit_hash), [c2.commit_hash, c1.commit_hash]);
  const p = (await collect(ls.listPrompts({ query: name }))).find((x) => x.repo_handle === name);
  assert.equal(p.num_commits, 2);
  assert.equal(p.last_commit_hash, c2.commit_hash);
  // A public prompt beside it (the SDK checks the workspace's handle in /settings first).
  const publicName = `public-greeter-${suffix}`;
  await ls.pushPrompt(publicName, { object: manifest("Greet the user."), isPublic: true });
  const pub = await ls.getPrompt(publicName);
  assert.equal(pub.is_public, true);
  // Its second commit names the owner: the SDK accepts an owner equal to
  // the tenant_handle of /settings.
  await ls.pushPrompt(`${pub.owner}/${publicName}`, { object: manifest("Greet the user warmly.") });
  assert.equal((await ls.pullPromptCommit(publicName, { skipCache: true })).manifest.kwargs.messages[0].kwargs.prompt.kwargs.template, "Greet the user warmly.");
  assert.equal((await ls.getPrompt(publicName)).num_commits, 2);
  fx.public_prompt = publicName;
  Object.assign(fx, { prompt: name, prompt_v1: first, prompt_v2: second, commit_v1: c1.commit_hash, commit_v2: c2.commit_hash, prompt_description: "Answers support questions" });
});

test("experiments: evaluate() on the dataset, then feedback, read back with listProjects({referenceDatasetId, includeStats})", async () => {
  const answers = { "How do I reset my password?": "Use the 'Forgot password' link.", "Can I change my plan?": "Yes, in Settings > Plan.", "Do you ship to Norway?": "No." };
  const model = traceable(async ({ question }) => {
    await sleep(40); // a latency the statistics can see
    return { answer: answers[question], usage_metadata: USAGE };
  }, { name: "answer-model", run_type: "llm", client: ls, tracingEnabled: true });
  const target = async (inputs) => ({ answer: (await model(inputs)).answer });
  const correctness = ({ outputs, referenceOutputs }) => ({ key: "correctness", score: outputs?.answer === referenceOutputs?.answer ? 1 : 0 });
  const results = await evaluate(target, {
    data: fx.dataset, evaluators: [correctness], experimentPrefix: `support-qa-baseline-${suffix}`, client: ls, maxConcurrency: 1,
    description: "baseline answers",
  });
  const experimentName = results.experimentName;
  const rows = results.results;
  assert.equal(rows.length, 3);
  await ls.awaitPendingTraceBatches();

  const roots = await eventually("experiment runs", async () => {
    const rs = await collect(ls.listRuns({ projectName: experimentName, isRoot: true }));
    return rs.length === 3 && rs.every((r) => r.end_time) && rs;
  });
  assert.deepEqual(roots.map((r) => r.reference_example_id).sort(), fx.current_example_ids);
  // Human feedback after the run, on the Norway answer.
  const norwayRun = roots.find((r) => r.reference_example_id === fx.examples.norway);
  await ls.createFeedback(norwayRun.id, "human_rating", { score: 0, comment: "should say yes", sessionId: norwayRun.session_id });
  await ls.awaitPendingTraceBatches();

  const experiment = await eventually("experiment statistics", async () => {
    const ps = await collect(ls.listProjects({ referenceDatasetId: fx.dataset_id, includeStats: true }));
    const p = ps.find((x) => x.name === experimentName);
    return p && p.run_count === 6 && p.feedback_stats?.correctness?.n === 3 && p.feedback_stats?.human_rating?.n === 1 && p;
  });
  assert.equal(experiment.reference_dataset_id, fx.dataset_id);
  assert.ok(Math.abs(experiment.feedback_stats.correctness.avg - 2 / 3) < 1e-9, JSON.stringify(experiment.feedback_stats));
  assert.equal(experiment.feedback_stats.human_rating.avg, 0);
  // Percentiles come from a histogram that is exact within 4.5% (docs/tracing.md).
  assert.ok(experiment.latency_p50 >= 0.04 * (1 - 0.045) && experiment.latency_p99 >= experiment.latency_p50, `latency ${experiment.latency_p50} ${experiment.latency_p99}`);
  assert.equal(experiment.total_tokens, 3 * USAGE.total_tokens);
  assert.equal(experiment.prompt_tokens, 3 * USAGE.input_tokens);
  assert.ok(Math.abs(Number(experiment.total_cost) - 3 * USAGE.total_cost) < 1e-9, `total_cost ${experiment.total_cost}`);
  // An experiment is not a reference-free tracing project.
  const free = await collect(ls.listProjects({ referenceFree: true }));
  assert.ok(!free.some((p) => p.id === experiment.id));
  assert.equal((await ls.readDataset({ datasetId: fx.dataset_id })).session_count, 1);
  fx.experiment = experimentName;
  fx.experiment_id = experiment.id;
  fx.experiment_stats = {
    latency_p50: experiment.latency_p50, latency_p99: experiment.latency_p99, total_cost: experiment.total_cost,
    prompt_cost: experiment.prompt_cost, completion_cost: experiment.completion_cost, feedback_stats: experiment.feedback_stats,
  };
  fx.experiment_run_norway = norwayRun.id;
});

test("billing: usage counts every trace ingested (GET /api/v1/orgs/current/billing/usage)", async () => {
  // Every root run of every project of the workspace is one trace.
  let traces = 0;
  for (const p of await collect(ls.listProjects())) {
    traces += (await collect(ls.listRuns({ projectId: p.id, isRoot: true }))).length;
  }
  const day = (d) => d.toISOString().slice(0, 10);
  const from = day(new Date(Date.now() - 86400000));
  const to = day(new Date(Date.now() + 2 * 86400000));
  const usage = await eventually("usage of every trace", async () => {
    const res = await fetchImpl(`${base}/api/v1/orgs/current/billing/usage?starting_on=${from}&ending_before=${to}`, { headers: { "X-API-Key": apiKey } });
    assert.equal(res.status, 200);
    const u = (await res.json()).find((m) => m.billable_metric_name === "traces");
    return u && u.value === traces && u;
  });
  const settings = await (await fetchImpl(`${base}/settings`, { headers: { "X-API-Key": apiKey } })).json();
  assert.deepEqual(usage.groups, { [settings.id]: traces });
  Object.assign(fx, { traces, usage_from: from, usage_to: to, workspace_id: settings.id, workspace_name: settings.display_name });
});

test("no request answered 5xx and the SDK reported no error", () => {
  noServerErrors(calls);
  assert.deepEqual(sdkErrors, [], "the SDK reported errors");
  fx.sdk_requests = calls.length;
});

after(() => writeFileSync(process.env.FIXTURE_OUT, JSON.stringify(fx)));
