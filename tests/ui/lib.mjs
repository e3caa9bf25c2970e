// Shared helpers of the UI specs: the browser (Debian's chromium through
// playwright-core, never a downloaded one), sign-in, API calls, screenshots
// and the axe-core check.
import { chromium } from 'playwright-core';
import AxeBuilder from '@axe-core/playwright';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BASE = process.env.AGENTPLANE_URL;
export const ADMIN = process.env.AGENTPLANE_API_KEY;
export const ARTIFACTS = process.env.UI_ARTIFACTS || path.resolve('artifacts');
export const env = (name) => {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run the specs through ui_test.go`);
  return v;
};

export const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// launch starts chromium with a fresh user data dir.
export async function launch() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-ui-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.UI_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
  context.setDefaultTimeout(20_000);
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// newPage opens a tab that fails the spec on any script error.
export async function newPage(context, errors = []) {
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of (4\d\d)/.test(m.text())) errors.push(`console: ${m.text()}`); });
  return page;
}

export async function api(method, p, body, key = ADMIN, headers = {}) {
  if (p.startsWith('/v2/') && key === ADMIN && !headers['X-Tenant-Id']) headers = { ...headers, 'X-Tenant-Id': await defaultWorkspace() };
  const res = await fetch(BASE + p, {
    method,
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  return { status: res.status, data, headers: res.headers };
}

export async function apiOK(method, p, body, key, headers) {
  const r = await api(method, p, body, key, headers);
  assert.ok(r.status >= 200 && r.status < 300, `${method} ${p}: ${r.status} ${JSON.stringify(r.data)}`);
  return r.data;
}

// signIn signs in on the page at base (the API's origin unless given),
// choosing the workspace by name when the key reaches several.
export async function signIn(page, key = ADMIN, { workspace = 'Default', base = BASE } = {}) {
  await page.goto(base + '/#/signin');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const heading = page.getByRole('heading', { level: 1 });
  await assertEventually(async () => /Deployments|Choose a workspace/.test(await heading.textContent()));
  if ((await heading.textContent()) === 'Choose a workspace') {
    const sel = page.getByLabel('Workspace');
    const options = await sel.locator('option').allTextContents();
    const label = options.find((o) => o.startsWith(workspace + ' ('));
    assert.ok(label, `workspace ${workspace} among ${options}`);
    await sel.selectOption({ label });
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
  }
}

export async function assertEventually(f, timeout = 20_000, what = 'condition') {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      if (await f()) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

// shot saves a screenshot of the page at 1280 and at 390 pixels wide, and
// checks that nothing is wider than the viewport at 390.
export async function shot(page, name) {
  fs.mkdirSync(path.join(ARTIFACTS, 'screenshots'), { recursive: true });
  const size = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: path.join(ARTIFACTS, 'screenshots', `${name}-1280.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await page.screenshot({ path: path.join(ARTIFACTS, 'screenshots', `${name}-390.png`), fullPage: true });
  await page.setViewportSize(size);
  assert.ok(overflow <= 0, `${name}: the page is ${overflow}px wider than a 390px screen`);
}

// axe runs axe-core on the page and fails on serious or critical
// violations; every result is written to artifacts/axe/NAME.json.
export async function axe(page, name) {
  const results = await new AxeBuilder({ page }).analyze();
  fs.mkdirSync(path.join(ARTIFACTS, 'axe'), { recursive: true });
  const summary = results.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  fs.writeFileSync(path.join(ARTIFACTS, 'axe', `${name}.json`), JSON.stringify({ url: page.url(), passes: results.passes.length, violations: summary }, null, 2));
  const bad = summary.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `${name}: serious or critical accessibility violations`);
  return summary;
}

// check runs both on one main page.
export async function check(page, name) {
  await axe(page, name);
  await shot(page, name);
}

export function noErrors(errors) {
  assert.deepEqual(errors, [], 'the page logged errors');
}

export async function waitDeployed(dep, rev, key = ADMIN) {
  let r;
  await assertEventually(async () => {
    r = await apiOK('GET', `/v2/deployments/${dep}/revisions/${rev}`, undefined, key);
    return !['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING'].includes(r.status);
  }, 60_000, `revision ${rev}`);
  assert.equal(r.status, 'DEPLOYED', JSON.stringify(r));
  return r;
}

// deploy creates a deployment from a repository through the API and waits
// until it is DEPLOYED.
export async function deploy(name, repo = env('UI_GOOD_REPO')) {
  const d = await apiOK('POST', '/v2/deployments', {
    name, source: 'repo_host',
    source_config: { repo_url: repo, deployment_type: 'dev', build_on_push: false },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
    secrets: [],
  });
  await waitDeployed(d.id, d.latest_revision_id);
  return d;
}

let wsDefault;
export async function defaultWorkspace() {
  if (!wsDefault) {
    const all = await apiOK('GET', '/api/v1/workspaces');
    wsDefault = all.find((w) => w.display_name === 'Default').id;
  }
  return wsDefault;
}

// ensureSecondWorkspace makes the admin key reach two workspaces, so the
// sign-in asks which one.
export async function ensureSecondWorkspace() {
  const all = await apiOK('GET', '/api/v1/workspaces');
  const other = all.find((w) => w.display_name === 'Research');
  if (other) return other.id;
  return (await apiOK('POST', '/api/v1/workspaces', { display_name: 'Research' })).id;
}

export async function graphStates(page) {
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#workflow-graph svg [data-state-name]')].map((g) => [g.dataset.stateName, g.dataset.state])));
}
