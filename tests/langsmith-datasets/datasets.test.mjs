// The real langsmith JS SDK (pinned in package.json), unmodified, against
// the datasets and prompts API. sdk_test.go serves it in process and runs
// `node --test datasets.test.mjs` with:
//   AGENTPLANE_URL      the API base ({base}; also tried as {base}/api/v1)
//   AGENTPLANE_API_KEY  an API key of the (only) workspace
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "langsmith";

const base = process.env.AGENTPLANE_URL;
const apiKey = process.env.AGENTPLANE_API_KEY;
if (!base || !apiKey) throw new Error("AGENTPLANE_URL and AGENTPLANE_API_KEY are required");

function client(apiUrl) {
  const c = new Client({ apiUrl, apiKey, autoBatchTracing: false });
  // The constructor forces 4 retries: a server error must fail the test,
  // not be retried away.
  c.caller.maxRetries = 0;
  return c;
}

async function all(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

const q = (examples) => examples.map((e) => e.inputs.q).sort();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const [label, apiUrl] of [["root", base], ["api/v1", `${base}/api/v1`]]) {
  const ls = client(apiUrl);

  test(`${label}: datasets, versioned examples, splits and tags`, async () => {
    const name = `sdk-${randomUUID()}`;
    const ds = await ls.createDataset(name, { description: "qa pairs", dataType: "kv", metadata: { team: "eval" } });
    assert.equal(ds.name, name);
    assert.equal(ds.data_type, "kv");

    const created = await ls.createExamples({
      datasetId: ds.id,
      inputs: [{ q: "a" }, { q: "b" }, { q: "c" }],
      outputs: [{ r: "A" }, { r: "B" }, { r: "C" }],
      metadata: [{ k: 1 }, { k: 2 }, { k: 3 }],
      splits: ["train", "test", ["train", "test"]],
    });
    assert.equal(created.length, 3);
    const byQ = Object.fromEntries(created.map((e) => [e.inputs.q, e]));
    const v1 = byQ.a.modified_at;
    assert.deepEqual(byQ.a.outputs, { r: "A" });
    assert.deepEqual(byQ.a.metadata.dataset_split, ["train"]);

    await sleep(2);
    await ls.updateExample(byQ.a.id, { inputs: { q: "a2" }, outputs: { r: "A2" }, split: "test" });
    const now = await all(ls.listExamples({ datasetId: ds.id }));
    assert.deepEqual(q(now), ["a2", "b", "c"]);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, asOf: v1 }))), ["a", "b", "c"]);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, splits: ["train"] }))), ["c"]);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, splits: ["train"], asOf: v1 }))), ["a", "c"]);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, filter: 'has(metadata, \'{"k": 2}\')' }))), ["b"]);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, metadata: { k: 3 } }))), ["c"]);

    const beforeDelete = (await ls.readExample(byQ.b.id)).modified_at;
    const v2 = (await ls.readDataset({ datasetId: ds.id })).modified_at;
    await sleep(2);
    await ls.deleteExample(byQ.b.id);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id }))), ["a2", "c"]);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, asOf: v2 }))), ["a2", "b", "c"]);
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, asOf: beforeDelete }))), ["a", "b", "c"]);

    // Tags and versions.
    await ls.updateDatasetTag({ datasetId: ds.id, asOf: v1, tag: "baseline" });
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, asOf: "baseline" }))), ["a", "b", "c"]);
    const version = await ls.readDatasetVersion({ datasetId: ds.id, tag: "baseline" });
    assert.equal(version.as_of, v1);
    assert.deepEqual(version.tags, ["baseline"]);
    assert.deepEqual(await ls.listDatasetSplits({ datasetId: ds.id, asOf: v1 }), ["test", "train"]);

    // Splits: the SDK tries its bulk metadata route, then falls back to
    // PUT /datasets/{id}/splits.
    await ls.updateDatasetSplits({ datasetId: ds.id, splitName: "gold", exampleIds: [byQ.c.id] });
    assert.deepEqual(q(await all(ls.listExamples({ datasetId: ds.id, splits: ["gold"] }))), ["c"]);

    const read = await ls.readDataset({ datasetId: ds.id });
    assert.equal(read.example_count, 2);
    assert.equal(read.session_count, 0);
    assert.equal((await ls.readDataset({ datasetName: name })).id, ds.id);
    const listed = await all(ls.listDatasets({ datasetIds: [ds.id] }));
    assert.deepEqual(listed.map((d) => d.id), [ds.id]);
    assert.ok((await all(ls.listDatasets({ datasetNameContains: name.slice(4, 20) }))).some((d) => d.id === ds.id));
    assert.ok((await all(ls.listDatasets({ metadata: { team: "eval" } }))).some((d) => d.id === ds.id));
    await ls.deleteDataset({ datasetId: ds.id });
    assert.equal(await ls.hasDataset({ datasetId: ds.id }), false);
  });

  test(`${label}: prompts, commits, stale parents`, async () => {
    const name = `greeter-${randomUUID().slice(0, 8)}`;
    const manifest = {
      lc: 1, type: "constructor", id: ["langchain", "prompts", "chat", "ChatPromptTemplate"],
      kwargs: { input_variables: ["name"], messages: [{ lc: 1, type: "constructor", id: ["x"], kwargs: { template: "Hi {name}" } }] },
    };
    const url = await ls.pushPrompt(name, { object: manifest, description: "says hi" });
    assert.match(url, new RegExp(name));
    const first = await ls.pullPromptCommit(name, { skipCache: true });
    assert.deepEqual(first.manifest, manifest);
    assert.deepEqual(first.examples, []);

    const manifest2 = { ...manifest, kwargs: { ...manifest.kwargs, input_variables: ["who"] } };
    await ls.createCommit(name, manifest2);
    const second = await ls.pullPromptCommit(name, { skipCache: true });
    assert.deepEqual(second.manifest, manifest2);
    assert.notEqual(second.commit_hash, first.commit_hash);
    const pinned = await ls.pullPromptCommit(`${name}:${first.commit_hash.slice(0, 8)}`, { skipCache: true });
    assert.deepEqual(pinned.manifest, manifest);

    // A commit on a parent that is no longer the latest is refused.
    await assert.rejects(ls.createCommit(name, manifest, { parentCommitHash: first.commit_hash }), (err) => {
      assert.match(String(err.message), /409/);
      return true;
    });

    const prompts = await all(ls.listPrompts({ query: name }));
    const p = prompts.find((x) => x.repo_handle === name);
    assert.ok(p, `listPrompts lacks ${name}`);
    assert.equal(p.num_commits, 2);
    assert.equal(p.last_commit_hash, second.commit_hash);
    assert.equal(p.description, "says hi");
    const commits = await all(ls.listCommits(name));
    assert.deepEqual(commits.map((c) => c.commit_hash), [second.commit_hash, first.commit_hash]);

    await ls.pushPrompt(name, { description: "says hello" });
    assert.equal((await ls.getPrompt(name)).description, "says hello");
    await ls.deletePrompt(name);
    assert.equal(await ls.getPrompt(name), null);
  });
}
