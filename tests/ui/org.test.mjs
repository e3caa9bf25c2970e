// Organization access for an admin key: the JIT and invites switches, the
// default SSO role and workspaces, invites, members, SCIM tokens (shown
// once) and the audit log. And for a Viewer key: nothing it may not do is
// offered, anywhere.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, signIn, apiOK, check, noErrors, assertEventually, deploy, BASE, ensureSecondWorkspace, defaultWorkspace } from './lib.mjs';

let browser;
let page;
const errors = [];
before(async () => {
  await ensureSecondWorkspace();
  browser = await launch();
  page = await newPage(browser.context, errors);
  await signIn(page);
});
after(async () => browser && browser.close());

const org = () => apiOK('GET', '/api/v1/organizations/current/info');

test('the JIT and invites switches', async () => {
  await page.getByRole('link', { name: 'Organization' }).click();
  await page.getByRole('heading', { name: 'Organization', level: 1 }).waitFor();
  const jit = page.getByRole('switch', { name: 'Just-in-time provisioning' });
  const inv = page.getByRole('switch', { name: 'Invites' });
  const start = await org();
  assert.equal(await jit.isChecked(), start.jit_provisioning_enabled);
  await check(page, 'org-settings');
  await jit.click();
  await page.getByText(`Just-in-time provisioning is now ${start.jit_provisioning_enabled ? 'off' : 'on'}.`).waitFor();
  assert.equal((await org()).jit_provisioning_enabled, !start.jit_provisioning_enabled);
  await page.getByRole('switch', { name: 'Just-in-time provisioning' }).click();
  await page.getByText(`Just-in-time provisioning is now ${start.jit_provisioning_enabled ? 'on' : 'off'}.`).waitFor();
  await inv.click();
  await page.getByText(/^Invites is now (on|off)\.$/).waitFor();
  assert.equal((await org()).invites_enabled, !start.invites_enabled);
  if (!start.invites_enabled) return;
  await page.getByRole('switch', { name: 'Invites' }).click();
  await page.getByText('Invites is now on.').waitFor();
  assert.equal((await org()).invites_enabled, true);
  noErrors(errors);
});

test('the default SSO role and workspaces, with the API\'s 422 at the field', async () => {
  await page.goto(BASE + '/#/org');
  const form = page.locator('form').filter({ has: page.getByLabel('Default role') });
  await form.waitFor();
  await page.getByLabel('Default role').selectOption('Editor');
  for (const cb of await form.locator('input[type=checkbox]').all()) await cb.uncheck();
  await page.getByRole('button', { name: 'Save SSO defaults' }).click();
  await form.locator('fieldset[data-loc="default_workspace_ids"] .field-error').filter({ hasText: /./ }).waitFor();
  assert.equal(await form.locator('fieldset[data-loc="default_workspace_ids"]').getAttribute('aria-invalid'), 'true');
  await check(page, 'org-sso-error');
  await page.getByLabel('Research').check();
  await page.getByRole('button', { name: 'Save SSO defaults' }).click();
  await page.getByText('Saved: Editor in 1 workspace(s).').waitFor();
  const sso = await apiOK('GET', '/api/v1/orgs/current/sso-settings');
  assert.equal(sso.default_workspace_role, 'Editor');
  assert.equal(sso.default_workspace_ids.length, 1);
  noErrors(errors);
});

test('invites: create, list, revoke with confirmation; refused while invites are off', async () => {
  await page.getByRole('link', { name: 'Invites' }).click();
  await page.getByRole('heading', { name: 'Invites', level: 1 }).waitFor();
  await page.getByLabel('Email').fill('ada@example.com');
  await page.getByLabel('Organization role').selectOption('Editor');
  await page.getByRole('group', { name: 'Workspace roles' }).getByLabel('Research').selectOption('User');
  await page.getByRole('button', { name: 'Send invite' }).click();
  await page.getByText('Invite for ada@example.com created.').waitFor();
  const row = page.getByRole('region', { name: 'Invites' }).locator('tr').filter({ hasText: 'ada@example.com' });
  await row.waitFor();
  assert.match(await row.textContent(), /Research: User/);
  await check(page, 'org-invites');
  // A bad email: the API's 422 at the field.
  await page.getByLabel('Email').fill('not an email');
  await page.getByRole('button', { name: 'Send invite' }).click();
  await assertEventually(async () => (await page.getByLabel('Email').getAttribute('aria-invalid')) === 'true', 10_000, 'the email error');
  // Revoke asks first.
  await row.getByRole('button', { name: 'Revoke the invite of ada@example.com' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
  await assertEventually(async () => (await page.getByRole('region', { name: 'Invites' }).locator('tr').filter({ hasText: 'ada@example.com' }).count()) === 0);
  await page.getByLabel('Show').selectOption('revoked');
  await page.getByRole('region', { name: 'Invites' }).locator('tr').filter({ hasText: 'ada@example.com' }).waitFor();
  // Invites off: the API's 400 is shown.
  await apiOK('PATCH', '/api/v1/organizations/current/info', { invites_enabled: false });
  await page.getByLabel('Email').fill('bob@example.com');
  await page.getByRole('button', { name: 'Send invite' }).click();
  await page.locator('.form-error').filter({ hasText: 'Invites are disabled' }).waitFor();
  await apiOK('PATCH', '/api/v1/organizations/current/info', { invites_enabled: true });
  noErrors(errors);
});

test('members: add, change the role, remove with confirmation', async () => {
  await page.getByRole('link', { name: 'Members' }).click();
  await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
  await page.getByLabel('Email').fill('grace@example.com');
  await page.getByLabel('Name', { exact: true }).fill('Grace');
  await page.getByLabel('Organization role').selectOption('Viewer');
  await page.getByRole('group', { name: 'Workspace roles' }).getByLabel('Default').selectOption('Editor');
  await page.getByRole('button', { name: 'Add member' }).click();
  await page.getByText('grace@example.com added.').waitFor();
  const row = page.getByRole('region', { name: 'Members' }).locator('tr').filter({ hasText: 'grace@example.com' });
  assert.match(await row.textContent(), /Default: Editor/);
  await check(page, 'org-members');
  await row.getByLabel('Organization role of grace@example.com').selectOption('Editor');
  await row.getByRole('button', { name: 'Save role of grace@example.com' }).click();
  await row.getByText('Saved: Editor').waitFor();
  await row.getByRole('button', { name: 'Remove grace@example.com' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
  await assertEventually(async () => (await page.getByRole('region', { name: 'Members' }).locator('tr').filter({ hasText: 'grace@example.com' }).count()) === 0);
  noErrors(errors);
});

test('SCIM tokens: shown once, listed, revoked', async () => {
  await page.getByRole('link', { name: 'SCIM tokens' }).click();
  await page.getByRole('heading', { name: 'SCIM tokens', level: 1 }).waitFor();
  await page.getByLabel('Description').fill('Okta');
  await page.getByRole('button', { name: 'Create SCIM token' }).click();
  const token = await page.getByLabel('New SCIM token').inputValue();
  assert.ok(token.length > 20);
  await page.getByText('it is shown only once').waitFor();
  // The token works against SCIM.
  const res = await fetch(BASE + '/scim/v2/Users', { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  const row = page.getByRole('region', { name: 'SCIM tokens' }).locator('tr').filter({ hasText: 'Okta' });
  await row.waitFor();
  assert.ok(!(await row.textContent()).includes(token), 'the list shows only the short form');
  await check(page, 'org-scim-tokens');
  // Leaving the page forgets it: it is not shown again.
  await page.getByRole('link', { name: 'Audit log' }).click();
  await page.getByRole('link', { name: 'SCIM tokens' }).click();
  await row.waitFor();
  assert.equal(await page.getByLabel('New SCIM token').count(), 0);
  await row.getByRole('button', { name: 'Revoke SCIM token Okta' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
  await assertEventually(async () => (await page.getByRole('region', { name: 'SCIM tokens' }).locator('tr').filter({ hasText: 'Okta' }).count()) === 0);
  assert.equal((await fetch(BASE + '/scim/v2/Users', { headers: { Authorization: `Bearer ${token}` } })).status, 401);
  noErrors(errors);
});

test('the audit log, filtered by action', async () => {
  await page.getByRole('link', { name: 'Audit log' }).click();
  await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
  const rows = page.getByRole('region', { name: 'Audit records' }).locator('tbody tr');
  await assertEventually(async () => (await rows.count()) >= 5);
  await check(page, 'org-audit');
  await page.getByLabel('Action').selectOption('scim_token.created');
  await assertEventually(async () => {
    const actions = await page.getByRole('region', { name: 'Audit records' }).locator('tbody tr td:nth-child(2)').allTextContents();
    return actions.length >= 1 && actions.every((a) => a === 'scim_token.created');
  });
  noErrors(errors);
});

test('a Viewer key is offered nothing it may not do', async () => {
  const dep = await deploy('ui-viewer');
  const thread = await apiOK('POST', `/deployments/${dep.id}/threads`, { metadata: { graph_id: 'agent' } });
  const ws = await defaultWorkspace();
  const k = await apiOK('POST', '/api/v1/api-key', { description: 'ui viewer', org_role: 'Viewer', workspaces: [{ workspace_id: ws, role: 'Viewer' }] });
  const vp = await newPage(browser.context, errors);
  await signIn(vp, k.key);
  // Deployments: read only.
  assert.equal(await vp.getByRole('link', { name: 'Create deployment' }).count(), 0);
  await vp.getByRole('link', { name: 'ui-viewer', exact: true }).click();
  await vp.getByRole('heading', { name: 'ui-viewer' }).waitFor();
  await vp.locator('#workflow-graph svg').waitFor();
  assert.equal(await vp.getByRole('button', { name: 'Delete deployment' }).count(), 0);
  assert.equal(await vp.getByRole('button', { name: /Redeploy/ }).count(), 0);
  await check(vp, 'viewer-deployment');
  // Threads: read only.
  await vp.goto(`${BASE}/#/deployments/${dep.id}/threads`);
  await vp.locator('#thread-range').waitFor();
  assert.equal(await vp.getByRole('link', { name: 'Create thread' }).count(), 0);
  await vp.goto(`${BASE}/#/deployments/${dep.id}/threads/${thread.thread_id}`);
  await vp.getByRole('heading', { name: `Thread ${thread.thread_id}` }).waitFor();
  assert.equal(await vp.getByRole('button', { name: 'Copy thread' }).count(), 0);
  assert.equal(await vp.getByRole('button', { name: 'Delete thread' }).count(), 0);
  // Organization: settings to read, no switches, no admin sections.
  await vp.getByRole('link', { name: 'Organization' }).click();
  await vp.getByRole('heading', { name: 'Organization', level: 1 }).waitFor();
  await vp.getByText('Default SSO role and workspaces').waitFor();
  assert.equal(await vp.getByRole('switch').count(), 0);
  assert.equal(await vp.getByRole('button', { name: 'Save SSO defaults' }).count(), 0);
  for (const name of ['Invites', 'Members', 'SCIM tokens', 'Audit log']) assert.equal(await vp.getByRole('link', { name }).count(), 0, name);
  await check(vp, 'viewer-org');
  await vp.goto(`${BASE}/#/org/members`);
  await vp.getByText('Members are for organization admins').waitFor();
  await vp.close();
  noErrors(errors);
});
