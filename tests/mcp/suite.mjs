// The client checks shared by both transports: the official MCP TypeScript
// SDK lists the 15 tools, calls each with the data the fixture describes,
// and walks every page of a long thread history.
//
// Everything it expects comes from the environment, so the same suite runs
// against the Go test's server and, later, against a real platform:
//   FIXTURE  JSON: {project, thread, turns, fill, trace_id, dataset, dataset_id,
//            example_id, version_tag, prompt, prompt_system, experiment,
//            usage_from, usage_to, workspace_name}
import { test } from "node:test";
import assert from "node:assert/strict";

export const fixture = JSON.parse(process.env.FIXTURE ?? "{}");

export const TOOLS = [
  "list_prompts", "get_prompt_by_name", "push_prompt", "get_thread_history", "fetch_runs",
  "list_projects", "get_billing_usage", "list_experiments", "list_datasets", "list_examples",
  "read_dataset", "read_example", "create_dataset", "update_examples", "run_experiment",
];

// call returns the parsed JSON answer of a tool, and whether it is an error.
export async function call(client, name, args = {}) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(Array.isArray(res.content) && res.content.length > 0, `${name}: no content`);
  assert.equal(res.content[0].type, "text");
  const text = res.content[0].text;
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    value = text;
  }
  if (!res.isError && typeof value === "object") {
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
  assert.equal(isError, true, `${name} should fail: ${JSON.stringify(value)}`);
  assert.match(value.error, pattern);
}

// messageIndex checks a message of the fixture's thread and returns its
// position in the conversation: user i is 2i, assistant i is 2i+1.
function messageIndex(m, thread) {
  const match = /^(\S+) (user|assistant) (\d+): /.exec(m.content);
  assert.ok(match, `unexpected message ${JSON.stringify(m).slice(0, 120)}`);
  assert.equal(match[1], thread);
  assert.equal(m.role, match[2]);
  return Number(match[3]) * 2 + (match[2] === "assistant" ? 1 : 0);
}

export function suite(name, connect) {
  let client;
  test(`${name}: connect`, async () => {
    client = await connect();
  });

  test(`${name}: lists the 15 tools with their schemas`, async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(byName.get_thread_history.inputSchema.required, ["thread_id", "project_name", "page_number"]);
    assert.deepEqual(byName.fetch_runs.inputSchema.required, ["project_name", "limit", "page_number"]);
    assert.equal(byName.get_thread_history.inputSchema.properties.max_chars_per_page.default, 25000);
    assert.equal(byName.list_prompts.inputSchema.properties.is_public.default, "false");
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object");
      assert.ok(t.description.length > 20, `${t.name}: description`);
    }
  });

  test(`${name}: walks every page of a long thread history`, async () => {
    const args = { thread_id: fixture.thread, project_name: fixture.project, preview_chars: 0, max_chars_per_page: 20000 };
    const first = await ok(client, "get_thread_history", { ...args, page_number: 1 });
    assert.ok(first.total_pages >= 5, `only ${first.total_pages} pages`);
    const all = [];
    for (let p = 1; p <= first.total_pages; p++) {
      const page = await ok(client, "get_thread_history", { ...args, page_number: p });
      assert.equal(page.page_number, p);
      assert.equal(page.total_pages, first.total_pages);
      assert.ok(page.result.length > 0);
      assert.ok(JSON.stringify(page.result).length <= 20000, `page ${p} over budget`);
      all.push(...page.result);
    }
    assert.equal(all.length, fixture.turns * 2);
    all.forEach((m, i) => {
      assert.equal(messageIndex(m, fixture.thread), i, `message ${i} out of place`);
      assert.ok(m.content.endsWith("q".repeat(fixture.fill)) || m.content.endsWith("a".repeat(fixture.fill)), "content cut");
    });
    const beyond = await ok(client, "get_thread_history", { ...args, page_number: first.total_pages + 1 });
    assert.deepEqual(beyond.result, []);
    // Defaults: 25000 characters a page, strings cut at 150 and marked.
    const def = await ok(client, "get_thread_history", { thread_id: fixture.thread, project_name: fixture.project, page_number: 1 });
    assert.equal(def.max_chars_per_page, 25000);
    assert.equal(def.preview_chars, 150);
    const full = `${fixture.thread} user 0: ${"q".repeat(fixture.fill)}`;
    assert.equal(def.result[0].content, full.slice(0, 150) + `… (+${full.length - 150} chars)`);
  });

  test(`${name}: fetch_runs, with and without trace_id`, async () => {
    const batch = await ok(client, "fetch_runs", { project_name: fixture.project, limit: 20, page_number: 1 });
    assert.equal(batch.runs.length, 20);
    assert.equal(batch.total_pages, 1);
    const errored = await ok(client, "fetch_runs", { project_name: fixture.project, limit: 100, page_number: 1, error: "true" });
    assert.ok(errored.runs.length > 0 && errored.runs.every((r) => r.error));
    const ids = new Set();
    const args = { project_name: fixture.project, limit: 100, trace_id: fixture.trace_id, max_chars_per_page: 6000 };
    const first = await ok(client, "fetch_runs", { ...args, page_number: 1 });
    for (let p = 1; p <= first.total_pages; p++) {
      for (const r of (await ok(client, "fetch_runs", { ...args, page_number: p })).runs) {
        assert.equal(r.trace_id, fixture.trace_id);
        assert.ok(!ids.has(r.id), "a run on two pages");
        ids.add(r.id);
      }
    }
    assert.equal(ids.size, fixture.trace_runs);
    await fails(client, "fetch_runs", { project_name: fixture.project, limit: 5, page_number: 1, filter: "eq(name," }, /filter/i);
  });

  test(`${name}: projects, experiments and billing usage`, async () => {
    const projects = await ok(client, "list_projects", { limit: 10 });
    assert.ok(projects.projects.some((p) => p.name === fixture.project && p.project_id));
    const ex = await ok(client, "list_experiments", { reference_dataset_name: fixture.dataset });
    const e = ex.experiments.find((x) => x.name === fixture.experiment);
    assert.ok(e, JSON.stringify(ex));
    assert.equal(typeof e.latency_p50_seconds, "number");
    assert.equal(typeof e.total_cost, "number");
    await fails(client, "list_experiments", {}, /reference_dataset/);
    const usage = await ok(client, "get_billing_usage", { starting_on: fixture.usage_from, ending_before: fixture.usage_to });
    assert.ok(usage.usage.length > 0);
    const groups = Object.values(usage.usage[0].groups);
    assert.ok(groups.some((g) => g.workspace_name === fixture.workspace_name && typeof g.value === "number"), JSON.stringify(groups));
  });

  test(`${name}: datasets and examples, with versions`, async () => {
    const list = await ok(client, "list_datasets", { dataset_name_contains: fixture.dataset });
    assert.ok(list.datasets.some((d) => d.id === fixture.dataset_id));
    const read = await ok(client, "read_dataset", { dataset_name: fixture.dataset });
    assert.equal(read.dataset.id, fixture.dataset_id);
    const now = await ok(client, "list_examples", { dataset_id: fixture.dataset_id, limit: 100 });
    assert.ok(now.examples.length >= 2);
    const then = await ok(client, "list_examples", { dataset_name: fixture.dataset, as_of: fixture.version_tag });
    assert.ok(then.examples.length < now.examples.length, "as_of should show an older version");
    const one = await ok(client, "read_example", { example_id: fixture.example_id });
    assert.equal(one.example.id, fixture.example_id);
    const old = await ok(client, "read_example", { example_id: fixture.example_id, as_of: fixture.version_tag });
    assert.notDeepEqual(old.example.outputs, one.example.outputs);
    await fails(client, "read_dataset", { dataset_name: "no-such-dataset-anywhere" }, /not found/);
  });

  test(`${name}: prompts`, async () => {
    const list = await ok(client, "list_prompts", { limit: 50 });
    assert.ok(list.prompts.some((p) => p.repo_handle === fixture.prompt));
    const p = await ok(client, "get_prompt_by_name", { prompt_name: fixture.prompt });
    assert.equal(p.metadata.lc_hub_repo, fixture.prompt);
    assert.equal(p.messages[0].prompt.template, fixture.prompt_system);
  });

  test(`${name}: documentation tools`, async () => {
    for (const [tool, needle] of [["push_prompt", "/commits/"], ["create_dataset", "/datasets"], ["update_examples", "/examples/"], ["run_experiment", "evaluate("]]) {
      const { value, isError, text } = await call(client, tool, {});
      assert.equal(isError, false);
      assert.equal(typeof value, "string");
      assert.ok(text.includes(needle), `${tool} lacks ${needle}`);
    }
  });

  test(`${name}: close`, async () => {
    await client.close();
  });
}
