// Sign-in (API key in sessionStorage only, workspace choice), sign-out,
// 401 back to sign-in, keyboard use, loading states and error messages, and
// the UI served from another origin than the API (as from S3 + CloudFront).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, signIn, apiOK, BASE, ADMIN, env, check, noErrors, ensureSecondWorkspace, assertEventually } from './lib.mjs';

let browser;
before(async () => {
  await ensureSecondWorkspace();
  browser = await launch();
});
after(async () => browser && browser.close());

test('a wrong key is refused at the form; the right one asks for the workspace', async () => {
  const errors = [];
  const page = await newPage(browser.context, errors);
  await page.goto(BASE + '/');
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await check(page, 'signin');
  await page.getByLabel('API key').fill('ap_not_a_key_000000000000000000');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'not accepted (401)' }).waitFor();
  assert.equal(await page.getByLabel('API key').getAttribute('aria-invalid'), null);
  await page.getByLabel('API key').fill(ADMIN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Choose a workspace' }).waitFor();
  await check(page, 'workspace-choice');
  await page.getByLabel('Workspace').selectOption({ label: 'Research (Admin)' });
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
  // The key is in this tab's sessionStorage, nowhere else.
  const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('agentplane.session'), local: JSON.stringify(localStorage), cookie: document.cookie }));
  assert.match(stored.session, /ap_test_ui_admin_key/);
  assert.equal(stored.local, '{}');
  assert.equal(stored.cookie, '');
  // Requests name the chosen workspace.
  const [req] = await Promise.all([
    page.waitForRequest((r) => r.url().includes('/v2/deployments?')),
    page.reload(),
  ]);
  const research = (await apiOK('GET', '/api/v1/workspaces')).find((w) => w.display_name === 'Research');
  assert.equal(req.headers()['x-tenant-id'], research.id);
  // Switching workspace in the header.
  await page.getByLabel('Workspace').selectOption({ label: 'Default (Admin)' });
  await page.getByText('Switched to workspace Default (Admin).').waitFor();
  // Sign out forgets the key.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('agentplane.session')), null);
  noErrors(errors);
  await page.close();
});

test('a key revoked mid-session (401) leads back to sign-in with the reason', async () => {
  const ws = (await apiOK('GET', '/api/v1/workspaces')).find((w) => w.display_name === 'Default');
  const k = await apiOK('POST', '/api/v1/api-key', { description: 'ui revoked', org_role: 'Viewer', workspaces: [{ workspace_id: ws.id, role: 'Viewer' }] });
  const page = await newPage(browser.context);
  await signIn(page, k.key);
  await apiOK('DELETE', `/api/v1/api-key/${k.id}`);
  await page.getByRole('link', { name: 'Organization' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByText(/API key was not accepted \(401\)/).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('agentplane.session')), null);
  // Signing in again returns to the page asked for.
  await page.getByLabel('API key').fill(ADMIN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Workspace').selectOption({ label: 'Default (Admin)' });
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('heading', { name: 'Organization', level: 1 }).waitFor();
  await page.close();
});

test('keyboard only: sign in, move through the navigation, focus is visible', async () => {
  const page = await newPage(browser.context);
  await page.goto(BASE + '/#/signin');
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  // Before the form: the brand link, then the skip link.
  await page.getByLabel('API key').focus();
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Shift+Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, 'none', 'focus is visible');
  await page.getByLabel('API key').focus();
  await page.keyboard.type(ADMIN);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Choose a workspace' }).waitFor();
  await page.getByRole('button', { name: 'Continue' }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
  // The new page's heading has the focus.
  assert.equal(await page.evaluate(() => document.activeElement.tagName), 'H1');
  // Tab forward to the Organization link and follow it with Enter.
  let found = false;
  for (let i = 0; i < 15 && !found; i++) {
    await page.keyboard.press('Tab');
    found = await page.evaluate(() => document.activeElement.textContent === 'Organization');
  }
  assert.ok(found, 'the Organization link is reachable with Tab');
  assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Organization', level: 1 }).waitFor();
  // Every control on the page has a label.
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !(el.textContent || '').trim())
    .map((el) => el.outerHTML.slice(0, 80)));
  assert.deepEqual(unlabelled, []);
  await page.close();
});

test('every request shows a loading state, and errors a clear message', async () => {
  const page = await newPage(browser.context);
  await signIn(page);
  // Hold the deployments list: the page says it is loading.
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route('**/v2/deployments?*', async (route) => { await held; await route.continue(); });
  await page.goto(BASE + '/#/deployments?name=slow');
  await page.getByText('Loading deployments…').waitFor();
  await page.locator('#busy').filter({ hasText: 'Loading…' }).waitFor();
  release();
  await page.getByText('No deployment matches this filter.').waitFor();
  assert.equal(await page.locator('#busy').textContent(), '');
  await page.unroute('**/v2/deployments?*');
  // A server failure and an unreachable API are both explained.
  await page.route('**/v2/deployments?*', (route) => route.fulfill({ status: 500, contentType: 'application/json', body: '{"detail":"boom"}' }));
  await page.goto(BASE + '/#/deployments?name=x500');
  await page.getByRole('alert').filter({ hasText: 'The server failed (500): boom. Try again.' }).waitFor();
  await page.unroute('**/v2/deployments?*');
  await page.route('**/v2/deployments?*', (route) => route.abort('connectionrefused'));
  await page.goto(BASE + '/#/deployments?name=down');
  await page.getByRole('alert').filter({ hasText: 'Could not reach the API' }).waitFor();
  await page.unroute('**/v2/deployments?*');
  await page.route('**/v2/deployments?*', (route) => route.fulfill({ status: 429, headers: { 'Retry-After': '7' }, contentType: 'application/json', body: '{"detail":"Rate limit exceeded"}' }));
  await page.goto(BASE + '/#/deployments?name=busy');
  await page.getByRole('alert').filter({ hasText: 'Too many requests (429): try again in 7 s.' }).waitFor();
  await page.unroute('**/v2/deployments?*');
  // A deployment that does not exist.
  await page.goto(BASE + '/#/deployments/00000000-0000-4000-8000-000000000000');
  await page.getByRole('alert').filter({ hasText: 'Not found (404)' }).waitFor();
  await page.close();
});

test('served from another origin (S3 + CloudFront), the UI calls the API named in ui/config.json', async () => {
  const errors = [];
  const page = await newPage(browser.context, errors);
  const staticURL = env('UI_STATIC_URL');
  const proxy = env('UI_PROXY_URL');
  const seen = [];
  page.on('request', (r) => { if (r.url().includes('/v2/') || r.url().includes('/api/v1/')) seen.push(new URL(r.url()).origin); });
  await signIn(page, ADMIN, { base: staticURL });
  await page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
  await assertEventually(async () => (await page.locator('table, main p').count()) > 0);
  assert.ok(seen.length > 0 && seen.every((o) => o === proxy), `API calls went to ${[...new Set(seen)]}`);
  assert.notEqual(new URL(staticURL).origin, proxy);
  noErrors(errors);
  await page.close();
});
