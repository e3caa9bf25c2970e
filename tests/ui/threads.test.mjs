// Threads of a deployment: create (validation at the fields), the list with
// status filter, sorting by the four columns in both orders and paging, a
// thread's state as a conversation with its raw JSON, its history, copy;
// and the page weight of the threads list.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launch, newPage, signIn, apiOK, api, deploy, check, noErrors, assertEventually, BASE, ARTIFACTS, ensureSecondWorkspace } from './lib.mjs';

let browser;
let page;
let dep;
const errors = [];
const seeded = [];

before(async () => {
  await ensureSecondWorkspace();
  dep = await deploy('ui-threads');
  // Seven idle and five interrupted threads (an __input__ superstep alone
  // leaves __start__ pending).
  for (let i = 0; i < 12; i++) {
    const interrupted = i % 5 === 0 || i % 4 === 0;
    const t = await apiOK('POST', `/deployments/${dep.id}/threads`, {
      metadata: { graph_id: 'agent', n: i },
      supersteps: interrupted ? [{ updates: [{ values: { messages: [{ type: 'human', content: `q${i}` }] }, as_node: '__input__' }] }] : undefined,
    });
    seeded.push(t);
  }
  browser = await launch();
  page = await newPage(browser.context, errors);
  await signIn(page);
});
after(async () => browser && browser.close());

const listURL = (q = '') => `${BASE}/#/deployments/${dep.id}/threads${q}`;

async function shownIds() {
  await page.locator('#thread-range').waitFor();
  return page.getByRole('region', { name: 'Threads' }).locator('tbody tr td:first-child').allTextContents();
}

async function apiIds(body) {
  const r = await api('POST', `/deployments/${dep.id}/threads/search`, body);
  assert.equal(r.status, 200);
  return { ids: r.data.map((t) => t.thread_id), total: Number(r.headers.get('x-pagination-total')) };
}

test('the list sorts by each sortable column in both orders, as the API does', async () => {
  await page.goto(listURL());
  await page.getByRole('heading', { name: 'Threads of ui-threads' }).waitFor();
  await check(page, 'threads');
  for (const sortBy of ['thread_id', 'status', 'created_at', 'updated_at']) {
    for (const order of ['asc', 'desc']) {
      // Each change reloads the list: wait for it before the next one.
      await page.getByLabel('Sort by', { exact: true }).selectOption(sortBy);
      await assertEventually(async () => page.url().includes(`sort_by=${sortBy}`), 10_000, `sort_by=${sortBy}`);
      await page.locator('#thread-range').waitFor();
      await page.getByLabel('Order').selectOption(order);
      await assertEventually(async () => page.url().includes(`sort_order=${order}`), 10_000, `sort_order=${order}`);
      const want = await apiIds({ limit: 10, offset: 0, sort_by: sortBy, sort_order: order });
      await assertEventually(async () => JSON.stringify(await shownIds()) === JSON.stringify(want.ids), 10_000, `order ${sortBy} ${order}`);
      const th = page.locator(`th[aria-sort]`);
      assert.equal(await th.getAttribute('aria-sort'), order === 'asc' ? 'ascending' : 'descending');
    }
  }
  // A column header link sorts by its column; again, it flips the order.
  await page.getByRole('link', { name: 'Created', exact: true }).click();
  await assertEventually(async () => page.url().includes('sort_by=created_at') && page.url().includes('sort_order=desc'), 10_000, 'created_at desc');
  await page.locator('th[aria-sort="descending"]').filter({ hasText: 'Created' }).waitFor();
  await page.getByRole('link', { name: 'Created', exact: true }).click();
  await assertEventually(async () => page.url().includes('sort_by=created_at') && page.url().includes('sort_order=asc'), 10_000, 'created_at asc');
  const want = await apiIds({ limit: 10, offset: 0, sort_by: 'created_at', sort_order: 'asc' });
  await assertEventually(async () => JSON.stringify(await shownIds()) === JSON.stringify(want.ids), 10_000, 'created_at asc rows');
  noErrors(errors);
});

test('the status filter and paging', async () => {
  await page.goto(listURL('?sort_by=thread_id&sort_order=asc'));
  await page.getByLabel('Status', { exact: true }).selectOption('interrupted');
  const want = await apiIds({ limit: 10, offset: 0, status: 'interrupted', sort_by: 'thread_id', sort_order: 'asc' });
  await assertEventually(async () => JSON.stringify(await shownIds()) === JSON.stringify(want.ids));
  assert.equal(await page.locator('#thread-range').textContent(), `1–${want.ids.length} of ${want.total}`);
  await page.getByLabel('Status', { exact: true }).selectOption('');
  await page.getByLabel('Per page').selectOption('10');
  const all = await apiIds({ limit: 100, offset: 0, sort_by: 'thread_id', sort_order: 'asc' });
  await assertEventually(async () => JSON.stringify(await shownIds()) === JSON.stringify(all.ids.slice(0, 10)));
  assert.equal(await page.locator('#thread-range').textContent(), `1–10 of ${all.total}`);
  await page.getByRole('link', { name: 'Next page' }).click();
  await assertEventually(async () => JSON.stringify(await shownIds()) === JSON.stringify(all.ids.slice(10, 20)));
  assert.equal(await page.locator('#thread-range').textContent(), `11–${Math.min(20, all.total)} of ${all.total}`);
  await page.getByRole('link', { name: 'Previous page' }).click();
  await assertEventually(async () => JSON.stringify(await shownIds()) === JSON.stringify(all.ids.slice(0, 10)));
  noErrors(errors);
});

test('create: the API\'s 422 next to the field, then a thread with an initial state', async () => {
  await page.goto(listURL());
  await page.getByRole('link', { name: 'Create thread' }).click();
  await page.getByRole('heading', { name: 'Create thread' }).waitFor();
  await assertEventually(async () => (await page.getByLabel('Graph').locator('option').count()) === 3);
  await check(page, 'thread-create');
  // Not JSON: caught before sending.
  await page.getByLabel('Metadata (JSON object)').fill('{"user": ');
  await page.getByRole('button', { name: 'Create thread' }).click();
  await page.locator('.field-error').filter({ hasText: 'Not valid JSON' }).waitFor();
  // A graph the deployment does not have: the API's 422 at metadata.
  await page.getByLabel('Metadata (JSON object)').fill('{"graph_id": "nope"}');
  await page.getByRole('button', { name: 'Create thread' }).click();
  const metaErr = page.locator('#' + (await page.getByLabel('Metadata (JSON object)').getAttribute('id')) + '-err');
  await assertEventually(async () => /graph_id: .*nope/i.test(await metaErr.textContent()), 10_000, 'the metadata error');
  assert.equal(await page.getByLabel('Metadata (JSON object)').getAttribute('aria-invalid'), 'true');
  // Metadata that is not an object: the API's 422 again.
  await page.getByLabel('Metadata (JSON object)').fill('[1, 2]');
  await page.getByRole('button', { name: 'Create thread' }).click();
  await assertEventually(async () => (await metaErr.textContent()).length > 0 && !/nope/.test(await metaErr.textContent()));
  await check(page, 'thread-create-errors');
  // A valid thread with a conversation.
  await page.getByLabel('Graph').selectOption('agent');
  await page.getByLabel('Metadata (JSON object)').fill('{"user": "ada"}');
  await page.getByLabel('Initial state (JSON object of values)').fill(JSON.stringify({
    messages: [{ type: 'human', content: 'What is 2 + 2?' }, { type: 'ai', content: 'It is 4.' }], topic: 'math',
  }));
  await page.getByRole('button', { name: 'Create thread' }).click();
  await page.getByText(/^Thread .* created\.$/).waitFor();
  await page.getByRole('heading', { name: /^Thread / }).waitFor();
  noErrors(errors);
});

test('a thread page: conversation, raw JSON, history and copy', async () => {
  const conv = page.getByRole('list', { name: 'Conversation' });
  await conv.waitFor();
  assert.deepEqual(await conv.locator('li .who').allTextContents(), ['Human', 'AI']);
  assert.deepEqual(await conv.locator('li .body').allTextContents(), ['What is 2 + 2?', 'It is 4.']);
  await page.getByText('"math"').first().waitFor();
  // Raw JSON is one click away.
  const raw = page.locator('#raw-state pre');
  assert.equal(await raw.isVisible(), false);
  await page.getByText('Raw JSON of the state').click();
  assert.equal(await raw.isVisible(), true);
  const snap = JSON.parse(await raw.textContent());
  assert.equal(snap.values.topic, 'math');
  // History: one checkpoint, step 0, source update, writes by __start__.
  const rows = page.getByRole('region', { name: 'History' }).locator('tbody tr');
  await assertEventually(async () => (await rows.count()) === 1);
  const cells = await rows.first().locator('td').allTextContents();
  assert.equal(cells[0], '0');
  assert.equal(cells[1], 'update');
  assert.match(cells[2], /__start__/);
  const tid = snap.checkpoint.thread_id;
  await check(page, 'thread');
  // Copy.
  await page.getByRole('button', { name: 'Copy thread' }).click();
  await page.getByText(`Copied thread ${tid} to`).waitFor();
  await assertEventually(async () => !(await page.getByRole('heading', { level: 1 }).textContent()).includes(tid));
  const copyId = (await page.getByRole('heading', { level: 1 }).textContent()).replace('Thread ', '');
  const copy = await apiOK('GET', `/deployments/${dep.id}/threads/${copyId}/state`);
  assert.equal(copy.values.topic, 'math');
  await assertEventually(async () => JSON.stringify(await page.getByRole('list', { name: 'Conversation' }).locator('li .body').allTextContents()) === JSON.stringify(['What is 2 + 2?', 'It is 4.']), 10_000, 'the copy\'s conversation');
  // Delete the copy (asks first).
  await page.getByRole('button', { name: 'Delete thread' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText(`Thread ${copyId} deleted.`).waitFor();
  assert.equal((await api('GET', `/deployments/${dep.id}/threads/${copyId}`)).status, 404);
  noErrors(errors);
});

test('the threads list page weighs at most 200 KB', async () => {
  // A fresh tab with the cache disabled, signed in through sessionStorage.
  const s = await page.evaluate(() => sessionStorage.getItem('agentplane.session'));
  const fresh = await browser.context.newPage();
  const cdp = await browser.context.newCDPSession(fresh);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const sizes = new Map();
  cdp.on('Network.responseReceived', (e) => sizes.set(e.requestId, { url: e.response.url, bytes: 0 }));
  cdp.on('Network.loadingFinished', (e) => { const r = sizes.get(e.requestId); if (r) r.bytes = e.encodedDataLength; });
  await fresh.goto(BASE + '/#/signin');
  await fresh.evaluate((v) => sessionStorage.setItem('agentplane.session', v), s);
  await fresh.goto(listURL('?limit=50'));
  await fresh.locator('#thread-range').waitFor();
  await fresh.waitForLoadState('networkidle');
  sizes.clear();
  await fresh.reload();
  await fresh.locator('#thread-range').waitFor();
  await fresh.waitForLoadState('networkidle');
  const total = [...sizes.values()].reduce((a, r) => a + r.bytes, 0);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.writeFileSync(path.join(ARTIFACTS, 'page-weight.json'), JSON.stringify({ page: 'threads list (50 per page)', transferred_bytes: total, requests: [...sizes.values()] }, null, 2));
  console.log(`threads list: ${total} bytes transferred in ${sizes.size} requests`);
  assert.ok(sizes.size >= 5, 'the page was loaded');
  assert.ok(total <= 200 * 1024, `the threads list transferred ${total} bytes`);
  await fresh.close();
});
