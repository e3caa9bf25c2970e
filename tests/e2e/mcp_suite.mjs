// The MCP client checks shared by both transports: the pinned MCP
// TypeScript SDK lists the 15 tools and calls each with arguments that hit
// what seed.test.mjs made with the langsmith SDK, checking that the answers
// carry exactly that data.
//   FIXTURE_FILE  the seed's fixture (JSON)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { codePoints } from "./lib.mjs";

export const fx = JSON.parse(readFileSync(process.env.FIXTURE_FILE, "utf8"));

export const TOOLS = [
  "list_prompts", "get_prompt_by_name", "push_prompt", "get_thread_history", "fetch_runs",
  "list_projects", "get_billing_usage", "list_experiments", "list_datasets", "list_examples",
  "read_dataset", "read_example", "create_dataset", "update_examples", "run_experiment",
];

// Every call the suite makes, by tool, for the report.
export const tally = {};

// call returns a tool's parsed answer and whether it is a tool error.
export async function call(client, name, args = {}) {
  const res = await client.callTool({ name, arguments: args });
  tally[name] = (tally[name] ?? 0) + 1;
  assert.ok(Array.isArray(res.content) && res.content.length === 1, `${name}: content ${JSON.stringify(res.content)}`);
  assert.equal(res.content[0].type, "text");
  const text = res.content[0].text;
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    value = text;
  }
  if (typeof value === "object") {
    assert.deepEqual(res.structuredContent, value, `${name}: structuredContent differs from the text`);
  }
  return { value, isError: res.isError === true, text };
}

export async function ok(client, name, args) {
  const { value, isError } = await call(client, name, args);
  assert.equal(isError, false, `${name}(${JSON.stringify(args)}): ${JSON.stringify(value)}`);
  return value;
}

export async function fails(client, name, args, pattern) {
  const { value, isError } = await call(client, name, args);
  assert.equal(isError, true, `${name}(${JSON.stringify(args)}) should fail: ${JSON.stringify(value).slice(0, 300)}`);
  assert.match(value.error, pattern);
  return value.error;
}

const sorted = (xs) => [...xs].sort();
const ids = (xs) => sorted(xs.map((x) => x.id));

// preview is what preview_chars does to a string: its first n code points
// and the count of the ones removed.
const preview = (s, n) => (codePoints(s) <= n ? s : [...s].slice(0, n).join("") + `… (+${codePoints(s) - n} chars)`);

// walk reads every page of a paginated tool call and checks the envelope.
export async function walk(client, tool, args, key) {
  const first = await ok(client, tool, { ...args, page_number: 1 });
  assert.ok(first.total_pages >= 1, JSON.stringify(first).slice(0, 200));
  const items = [];
  for (let p = 1; p <= first.total_pages; p++) {
    const { value: page, text } = await call(client, tool, { ...args, page_number: p });
    assert.equal(page.page_number, p);
    assert.equal(page.total_pages, first.total_pages);
    assert.ok(page[key].length > 0, `page ${p} is empty`);
    if (args.max_chars_per_page && !page._truncated) {
      assert.ok(codePoints(JSON.stringify(page[key])) <= args.max_chars_per_page, `page ${p} over budget`);
    }
    // No server state: the same request gives the same bytes.
    assert.equal((await call(client, tool, { ...args, page_number: p })).text, text, `page ${p} differs when asked again`);
    items.push(...page[key]);
  }
  const beyond = await ok(client, tool, { ...args, page_number: first.total_pages + 1 });
  assert.deepEqual(beyond[key], []);
  assert.equal(beyond.total_pages, first.total_pages);
  return { items, pages: first.total_pages };
}

// historyWalk reads the seeded conversation page by page and checks that
// the pages together hold every message exactly once, in order.
export async function historyWalk(client, maxChars = 2500) {
  const args = { thread_id: fx.thread, project_name: fx.project, preview_chars: 0, max_chars_per_page: maxChars };
  const { items, pages } = await walk(client, "get_thread_history", args, "result");
  assert.ok(pages >= 5, `only ${pages} pages`);
  assert.equal(items.length, fx.messages.length);
  assert.deepEqual(items, fx.messages);
  return pages;
}

export function suite(label, connect, { endpoint }) {
  let client;
  test(`${label}: connect (initialize)`, async () => {
    client = await connect();
    const info = client.getServerVersion();
    assert.ok(info?.name, JSON.stringify(info));
    assert.ok(client.getServerCapabilities()?.tools);
  });

  test(`${label}: tools/list: the 15 tools, read-only, with exact schemas`, async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(sorted(tools.map((t) => t.name)), sorted(TOOLS));
    const by = Object.fromEntries(tools.map((t) => [t.name, t]));
    const required = {
      get_thread_history: ["page_number", "project_name", "thread_id"],
      fetch_runs: ["limit", "page_number", "project_name"],
      get_prompt_by_name: ["prompt_name"],
      read_example: ["example_id"],
      get_billing_usage: ["ending_before", "starting_on"],
    };
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object", t.name);
      assert.ok(t.description.length > 20, `${t.name}: description`);
      assert.equal(t.annotations?.readOnlyHint, true, `${t.name}: readOnlyHint`);
      assert.deepEqual(sorted(t.inputSchema.required ?? []), required[t.name] ?? [], `${t.name}: required`);
    }
    const props = (n) => by[n].inputSchema.properties;
    assert.equal(props("get_thread_history").max_chars_per_page.default, 25000);
    assert.equal(props("get_thread_history").preview_chars.default, 150);
    assert.equal(props("get_thread_history").page_number.type, "integer");
    assert.equal(props("fetch_runs").order_by.default, "-start_time");
    assert.equal(props("list_projects").limit.default, 5);
    assert.equal(props("list_prompts").limit.default, 20);
    assert.equal(props("list_prompts").is_public.default, "false");
    assert.equal(props("list_examples").limit.default, 10);
    assert.equal(props("get_billing_usage").on_current_plan.default, "true");
  });

  test(`${label}: get_thread_history: every page of the long conversation, each message once and in order`, async () => {
    await historyWalk(client, 2500);
    // One more budget, so a page boundary that drops or repeats an item
    // somewhere else would show.
    await historyWalk(client, 4100);
  });

  test(`${label}: get_thread_history: defaults, previews, caps and errors`, async () => {
    const def = await ok(client, "get_thread_history", { thread_id: fx.thread, project_name: fx.project, page_number: 1 });
    assert.equal(def.max_chars_per_page, 25000);
    assert.equal(def.preview_chars, 150);
    assert.equal(def.result[0].content, preview(fx.messages[0].content, 150));
    assert.equal(def.result[0].role, "user");
    let n = def.result.length;
    for (let p = 2; p <= def.total_pages; p++) {
      const page = await ok(client, "get_thread_history", { thread_id: fx.thread, project_name: fx.project, page_number: p });
      page.result.forEach((m, i) => assert.equal(m.content, preview(fx.messages[n + i].content, 150)));
      n += page.result.length;
    }
    assert.equal(n, fx.messages.length);
    const capped = await ok(client, "get_thread_history", { thread_id: fx.thread, project_name: fx.project, page_number: 1, max_chars_per_page: 1000000, preview_chars: 0 });
    assert.equal(capped.max_chars_per_page, 30000);
    await fails(client, "get_thread_history", { thread_id: "no-such-thread", project_name: fx.project, page_number: 1 }, /No runs found for thread no-such-thread/);
    // The short thread has chain and tool runs only: no model messages.
    await fails(client, "get_thread_history", { thread_id: fx.short_thread, project_name: fx.project, page_number: 1 }, /No runs found/);
    await fails(client, "get_thread_history", { thread_id: 'x", "y', project_name: fx.project, page_number: 1 }, /quotes/);
    await fails(client, "get_thread_history", { thread_id: fx.thread, project_name: "no-such-project", page_number: 1 }, /not found/);
    await fails(client, "get_thread_history", { thread_id: fx.thread, project_name: fx.project }, /page_number/);
  });

  test(`${label}: fetch_runs without trace_id: one batch, filters`, async () => {
    const batch = await ok(client, "fetch_runs", { project_name: fx.project, limit: 100, page_number: 1 });
    assert.equal(batch.runs.length, 100);
    assert.equal(batch.total_pages, 1);
    const starts = batch.runs.map((r) => Date.parse(r.start_time.endsWith("Z") ? r.start_time : r.start_time + "Z"));
    assert.deepEqual(starts, [...starts].sort((a, b) => b - a), "newest first by default");
    assert.deepEqual((await ok(client, "fetch_runs", { project_name: fx.project, limit: 100, page_number: 2 })).runs, []);

    const roots = await ok(client, "fetch_runs", { project_name: fx.project, limit: 100, page_number: 1, is_root: "true" });
    assert.equal(roots.runs.length, fx.root_count);
    assert.ok(roots.runs.every((r) => r.parent_run_id == null));
    const errs = await ok(client, "fetch_runs", { project_name: fx.project, limit: 100, page_number: 1, error: "true" });
    assert.equal(errs.runs.length, fx.error_count);
    assert.ok(errs.runs.every((r) => /search backend unavailable/.test(r.error)));
    assert.deepEqual(sorted(new Set(errs.runs.map((r) => r.trace_id))), sorted(fx.error_trace_ids));
    const llms = await ok(client, "fetch_runs", { project_name: fx.project, limit: 100, page_number: 1, run_type: "llm", preview_chars: 0 });
    assert.equal(llms.runs.length, fx.llm_count);
    assert.ok(llms.runs.every((r) => r.extra.metadata.thread_id === fx.thread && r.total_tokens === 32));
    const oldest = await ok(client, "fetch_runs", { project_name: fx.project, limit: 3, page_number: 1, run_type: "llm", order_by: "start_time", preview_chars: 0 });
    assert.deepEqual(oldest.runs.map((r) => r.outputs.choices[0].message), [fx.messages[1], fx.messages[3], fx.messages[5]]);
    assert.deepEqual(oldest.runs.map((r) => r.inputs.messages[0]), [fx.messages[0], fx.messages[2], fx.messages[4]]);
    const named = await ok(client, "fetch_runs", { project_name: fx.project, limit: 10, page_number: 1, filter: 'eq(name, "research")' });
    assert.deepEqual(named.runs.map((r) => r.trace_id), [fx.research_trace]);
    const tree = await ok(client, "fetch_runs", { project_name: fx.project, limit: 10, page_number: 1, is_root: "true", tree_filter: 'eq(name, "lookup")' });
    assert.deepEqual(tree.runs.map((r) => r.name), ["research"]);
    const underErrors = await ok(client, "fetch_runs", { project_name: fx.project, limit: 100, page_number: 1, run_type: "tool", trace_filter: 'eq(name, "agent")' });
    assert.deepEqual(underErrors.runs.map((r) => r.name), ["search", "search"]);
    const fb = await ok(client, "fetch_runs", { project_name: fx.project, limit: 10, page_number: 1, filter: 'and(eq(feedback_key, "helpfulness"), eq(feedback_score, 1))' });
    assert.deepEqual(fb.runs.map((r) => r.id), [fx.turn_run]);
    const both = await ok(client, "fetch_runs", { project_name: JSON.stringify([fx.project, fx.experiment]), limit: 100, page_number: 1, run_type: "llm" });
    assert.equal(both.runs.length, fx.llm_count + 3);
    const byExample = await ok(client, "fetch_runs", { project_name: fx.experiment, limit: 10, page_number: 1, reference_example_id: fx.examples.norway });
    assert.ok(byExample.runs.some((r) => r.id === fx.experiment_run_norway));
    assert.ok(byExample.runs.every((r) => r.reference_example_id === fx.examples.norway));
    const cut = await ok(client, "fetch_runs", { project_name: fx.project, limit: 1, page_number: 1, filter: 'eq(name, "lookup")', preview_chars: 20 });
    assert.match(cut.runs[0].outputs.notes, /^note \d+: x{1,14}… \(\+\d+ chars\)$/);

    await fails(client, "fetch_runs", { project_name: fx.project, limit: 5, page_number: 1, filter: "eq(name," }, /filter/i);
    await fails(client, "fetch_runs", { project_name: fx.project, limit: 5, page_number: 1, order_by: "name" }, /order_by/);
    await fails(client, "fetch_runs", { project_name: "no-such-project", limit: 5, page_number: 1 }, /not found/);
  });

  test(`${label}: fetch_runs with trace_id: every page of the deep trace, each run once`, async () => {
    const args = { project_name: fx.project, limit: 100, trace_id: fx.research_trace, max_chars_per_page: 3000, preview_chars: 0 };
    const { items, pages } = await walk(client, "fetch_runs", args, "runs");
    assert.ok(pages >= 5, `only ${pages} pages`);
    assert.equal(items.length, fx.research_runs);
    assert.equal(new Set(items.map((r) => r.id)).size, fx.research_runs);
    assert.ok(items.every((r) => r.trace_id === fx.research_trace));
    const notes = items.filter((r) => r.name === "lookup").map((r) => r.outputs.step);
    assert.deepEqual(sorted(notes.map(String)), sorted([...Array(fx.research_runs - 1).keys()].map(String)));
  });

  test(`${label}: list_projects: tracing projects, experiments by dataset, more_info`, async () => {
    const all = await ok(client, "list_projects", { limit: 100 });
    const mine = all.projects.find((p) => p.name === fx.project);
    assert.deepEqual(mine, { name: fx.project, project_id: fx.project_id });
    assert.ok(!all.projects.some((p) => p.name === fx.experiment), "an experiment listed as a tracing project");
    const byName = await ok(client, "list_projects", { project_name: fx.suffix, limit: 10 });
    assert.deepEqual(byName.projects, [{ name: fx.project, project_id: fx.project_id }]);
    assert.equal((await ok(client, "list_projects", {})).projects.length <= 5, true);
    for (const ref of [{ reference_dataset_id: fx.dataset_id }, { reference_dataset_name: fx.dataset }]) {
      const ex = await ok(client, "list_projects", { ...ref, limit: 10 });
      assert.deepEqual(ex.projects, [{ name: fx.experiment, project_id: fx.experiment_id }]);
    }
    const full = await ok(client, "list_projects", { project_name: fx.suffix, more_info: "true" });
    assert.equal(full.projects.length, 1);
    assert.equal(full.projects[0].id, fx.project_id);
    assert.equal(full.projects[0].reference_dataset_id, null);
    await fails(client, "list_projects", { reference_dataset_id: fx.dataset_id, reference_dataset_name: fx.dataset }, /only one/);
    await fails(client, "list_projects", { reference_dataset_name: "no-such-dataset" }, /not found/);
  });

  test(`${label}: list_experiments: the SDK's experiment with its latency, cost and feedback`, async () => {
    const s = fx.experiment_stats;
    for (const ref of [{ reference_dataset_id: fx.dataset_id }, { reference_dataset_name: fx.dataset }]) {
      const { experiments } = await ok(client, "list_experiments", ref);
      assert.equal(experiments.length, 1);
      const e = experiments[0];
      assert.equal(e.name, fx.experiment);
      assert.equal(e.experiment_id, fx.experiment_id);
      assert.deepEqual(e.feedback_stats, s.feedback_stats);
      assert.ok(Math.abs(e.latency_p50_seconds - s.latency_p50) < 1e-9, `${e.latency_p50_seconds} vs ${s.latency_p50}`);
      assert.ok(Math.abs(e.latency_p99_seconds - s.latency_p99) < 1e-9);
      assert.ok(e.latency_p50_seconds >= 0.04 * (1 - 0.045)); // histogram: exact within 4.5%
      assert.equal(e.total_cost, Number(s.total_cost));
      assert.equal(e.prompt_cost, Number(s.prompt_cost));
      assert.equal(e.completion_cost, Number(s.completion_cost));
    }
    await fails(client, "list_experiments", {}, /reference_dataset/);
    await fails(client, "list_experiments", { reference_dataset_id: fx.dataset_id, reference_dataset_name: fx.dataset }, /reference_dataset/);
  });

  test(`${label}: get_billing_usage: the traces the SDK sent`, async () => {
    const range = { starting_on: fx.usage_from, ending_before: fx.usage_to };
    const want = { [fx.workspace_id]: { workspace_name: fx.workspace_name, value: fx.traces } };
    const { usage } = await ok(client, "get_billing_usage", range);
    const traces = usage.find((m) => m.billable_metric_name === "traces");
    assert.ok(traces, JSON.stringify(usage));
    assert.equal(traces.value, fx.traces);
    assert.deepEqual(traces.groups, want);
    for (const workspace of [fx.workspace_name, fx.workspace_id]) {
      const one = await ok(client, "get_billing_usage", { ...range, workspace, on_current_plan: "false" });
      assert.deepEqual(one.usage.find((m) => m.billable_metric_name === "traces").groups, want);
    }
    const before = await ok(client, "get_billing_usage", { starting_on: "2020-01-01T00:00:00Z", ending_before: "2020-02-01T00:00:00Z" });
    assert.ok(before.usage.every((m) => m.value === 0), JSON.stringify(before));
    await fails(client, "get_billing_usage", { ...range, workspace: "no-such-workspace" }, /workspace/);
    await fails(client, "get_billing_usage", { starting_on: "yesterday", ending_before: fx.usage_to }, /starting_on/);
  });

  test(`${label}: list_prompts and get_prompt_by_name: both commits of the pushed prompt`, async () => {
    const list = await ok(client, "list_prompts", { limit: 100 });
    const p = list.prompts.find((x) => x.repo_handle === fx.prompt);
    assert.ok(p, JSON.stringify(list).slice(0, 500));
    assert.equal(p.description, fx.prompt_description);
    assert.equal(p.is_public, false);
    assert.equal(p.full_name, `${p.owner}/${fx.prompt}`);
    assert.equal(Object.keys(p).length, 12);
    assert.ok(list.total_count >= 1);
    assert.ok(!list.prompts.some((x) => x.repo_handle === fx.public_prompt), "a public prompt among the private ones");
    const pub = await ok(client, "list_prompts", { is_public: "true" });
    assert.ok(!pub.prompts.some((x) => x.repo_handle === fx.prompt));
    assert.equal(pub.prompts.find((x) => x.repo_handle === fx.public_prompt)?.is_public, true, JSON.stringify(pub));

    const latest = await ok(client, "get_prompt_by_name", { prompt_name: fx.prompt });
    assert.equal(latest._type, "ChatPromptTemplate");
    assert.equal(latest.messages[0].prompt.template, fx.prompt_v2);
    assert.equal(latest.messages[1].prompt.template, "{question}");
    assert.deepEqual(latest.input_variables, ["question"]);
    assert.deepEqual(latest.metadata, { lc_hub_owner: "-", lc_hub_repo: fx.prompt, lc_hub_commit_hash: fx.commit_v2 });
    const first = await ok(client, "get_prompt_by_name", { prompt_name: `${fx.prompt}:${fx.commit_v1}` });
    assert.equal(first.messages[0].prompt.template, fx.prompt_v1);
    assert.equal(first.metadata.lc_hub_commit_hash, fx.commit_v1);
    const owned = await ok(client, "get_prompt_by_name", { prompt_name: `${p.owner}/${fx.prompt}:${fx.commit_v1.slice(0, 8)}` });
    assert.equal(owned.metadata.lc_hub_commit_hash, fx.commit_v1);
    await fails(client, "get_prompt_by_name", { prompt_name: "no-such-prompt" }, /not found/);
  });

  test(`${label}: list_datasets and read_dataset`, async () => {
    const check = (d) => {
      assert.equal(d.id, fx.dataset_id);
      assert.equal(d.name, fx.dataset);
      assert.equal(d.description, fx.dataset_description);
      assert.equal(d.data_type, "kv");
      assert.equal(d.example_count, 3);
      assert.equal(d.session_count, 1);
      assert.equal(Object.keys(d).length, 11);
      assert.deepEqual(d.inputs_schema_definition, fx.inputs_schema);
      assert.deepEqual(d.outputs_schema_definition, fx.outputs_schema);
    };
    for (const args of [
      { dataset_name_contains: fx.suffix }, { dataset_name: fx.dataset }, { dataset_ids: JSON.stringify([fx.dataset_id]) },
      { dataset_ids: fx.dataset_id }, { metadata: JSON.stringify({ suffix: fx.suffix }) }, { data_type: "kv", dataset_name: fx.dataset },
    ]) {
      const { datasets, total_count } = await ok(client, "list_datasets", args);
      assert.equal(datasets.length, 1, JSON.stringify(args));
      assert.equal(total_count, 1);
      check(datasets[0]);
    }
    assert.deepEqual((await ok(client, "list_datasets", { data_type: "chat", dataset_name: fx.dataset })).datasets, []);
    check((await ok(client, "read_dataset", { dataset_id: fx.dataset_id })).dataset);
    check((await ok(client, "read_dataset", { dataset_name: fx.dataset })).dataset);
    await fails(client, "read_dataset", { dataset_name: "no-such-dataset" }, /not found/);
    await fails(client, "read_dataset", {}, /dataset_id|dataset_name/);
  });

  test(`${label}: list_examples and read_example: versions (as_of timestamp and tag) and splits`, async () => {
    const e = fx.examples;
    const now = await ok(client, "list_examples", { dataset_id: fx.dataset_id });
    assert.deepEqual(ids(now.examples), fx.current_example_ids);
    assert.equal(now.total_count, 3);
    assert.deepEqual(now.examples.find((x) => x.id === e.reset).outputs, fx.reset_outputs_now);
    assert.deepEqual(sorted(Object.keys(now.examples[0])), sorted(["id", "dataset_id", "inputs", "outputs", "metadata", "created_at", "modified_at", "source_run_id", "runs", "attachments"]));
    for (const as_of of [fx.version_tag, fx.v1]) {
      const then = await ok(client, "list_examples", { dataset_name: fx.dataset, as_of });
      assert.deepEqual(ids(then.examples), fx.v1_example_ids, as_of);
      assert.deepEqual(then.examples.find((x) => x.id === e.reset).outputs, fx.reset_outputs_v1);
    }
    // Between the edit and the delete.
    const v2 = await ok(client, "list_examples", { dataset_id: fx.dataset_id, as_of: fx.v2 });
    assert.deepEqual(ids(v2.examples), fx.v1_example_ids);
    assert.deepEqual(v2.examples.find((x) => x.id === e.reset).outputs, fx.reset_outputs_now);
    assert.deepEqual(ids((await ok(client, "list_examples", { dataset_id: fx.dataset_id, splits: JSON.stringify(["train"]) })).examples), fx.train_now);
    assert.deepEqual(ids((await ok(client, "list_examples", { dataset_id: fx.dataset_id, splits: "test", as_of: fx.version_tag })).examples), fx.test_v1);
    assert.deepEqual(ids((await ok(client, "list_examples", { example_ids: JSON.stringify([e.reset, e.plan]) })).examples), sorted([e.reset, e.plan]));
    assert.deepEqual(ids((await ok(client, "list_examples", { dataset_id: fx.dataset_id, metadata: JSON.stringify({ order: 2 }) })).examples), [e.plan]);
    assert.deepEqual(ids((await ok(client, "list_examples", { dataset_id: fx.dataset_id, filter: "eq(metadata.order, 3)" })).examples), [e.norway]);
    const page = await ok(client, "list_examples", { dataset_id: fx.dataset_id, limit: 1, offset: "1" });
    assert.deepEqual(page.examples.map((x) => x.id), [now.examples[1].id]);
    await fails(client, "list_examples", {}, /example_ids|dataset_id|dataset_name/);

    const one = await ok(client, "read_example", { example_id: e.reset });
    assert.deepEqual(one.example.outputs, fx.reset_outputs_now);
    assert.equal(one.example.dataset_id, fx.dataset_id);
    assert.deepEqual((await ok(client, "read_example", { example_id: e.reset, as_of: fx.version_tag })).example.outputs, fx.reset_outputs_v1);
    assert.deepEqual((await ok(client, "read_example", { example_id: e.reset, as_of: fx.v1 })).example.outputs, fx.reset_outputs_v1);
    // The deleted example is in the earlier version only.
    assert.equal((await ok(client, "read_example", { example_id: e.invoices, as_of: fx.v1 })).example.id, e.invoices);
    await fails(client, "read_example", { example_id: e.invoices }, /404|not found/i);
  });

  test(`${label}: documentation tools name this platform's endpoint`, async () => {
    for (const [tool, needles] of [
      ["push_prompt", ["/commits/-/", "/repos/", "pushPrompt"]],
      ["create_dataset", ["/datasets", "/examples", "createExamples"]],
      ["update_examples", ["/examples/", "as_of", "updateExample"]],
      ["run_experiment", ["evaluate(", "reference_dataset", "/feedback"]],
    ]) {
      const { value, isError, text } = await call(client, tool, {});
      assert.equal(isError, false);
      assert.equal(typeof value, "string", `${tool} answers markdown`);
      assert.ok(text.includes(`${endpoint}/`), `${tool} does not name ${endpoint}`);
      for (const n of needles) assert.ok(text.includes(n), `${tool} lacks ${n}`);
    }
  });

  test(`${label}: close`, async () => {
    await client.close();
  });
}
