// Deployments: list, create with the API's validation at the fields, a
// build watched on the workflow graph until DEPLOYED (and while a fetch is
// held, running), a failed build shown failed, redeploy and delete with
// confirmation.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, signIn, apiOK, env, check, noErrors, graphStates, assertEventually, ensureSecondWorkspace } from './lib.mjs';

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

async function createThroughForm(name, repo, { ref = '' } = {}) {
  await page.getByRole('link', { name: 'Deployments', exact: true }).first().click();
  await page.getByRole('link', { name: 'Create deployment' }).click();
  await page.getByRole('heading', { name: 'Create deployment' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('Repository URL').fill(repo);
  await page.getByLabel('Branch or tag').fill(ref);
  await page.getByRole('button', { name: 'Create deployment' }).click();
}

async function waitGraph(status) {
  await assertEventually(async () => (await page.locator('#workflow-graph').getAttribute('data-revision-status')) === status, 60_000, `revision ${status}`);
  return graphStates(page);
}

test('create: the API\'s 422s and 409s are shown at the fields', async () => {
  await page.getByRole('link', { name: 'Create deployment' }).click();
  await page.getByRole('heading', { name: 'Create deployment' }).waitFor();
  await check(page, 'deployment-create');
  // Nothing filled in: the API names the missing name and repository.
  await page.getByRole('button', { name: 'Create deployment' }).click();
  const nameErr = page.locator('#' + (await page.getByLabel('Name', { exact: true }).getAttribute('id')) + '-err');
  await assertEventually(async () => /at least 1 character|required|empty/i.test(await nameErr.textContent()), 10_000, 'the name error');
  assert.equal(await page.getByLabel('Name', { exact: true }).getAttribute('aria-invalid'), 'true');
  // With a name, the API names the empty repository URL.
  await page.getByLabel('Name', { exact: true }).fill('no-repo');
  await page.getByRole('button', { name: 'Create deployment' }).click();
  const repoErr = page.locator('#' + (await page.getByLabel('Repository URL').getAttribute('id')) + '-err');
  await assertEventually(async () => /repo_url must not be empty/.test(await repoErr.textContent()), 10_000, 'the repository error');
  assert.equal(await page.getByLabel('Name', { exact: true }).getAttribute('aria-invalid'), null);
  // A bad secret name is shown in the secrets group.
  await page.getByLabel('Name', { exact: true }).fill('bad-secret');
  await page.getByLabel('Repository URL').fill(env('UI_GOOD_REPO'));
  await page.getByRole('button', { name: 'Add secret' }).click();
  await page.getByLabel('Name 1').fill('1NOT-A-NAME');
  await page.getByLabel('Value 1').fill('x');
  await page.getByRole('button', { name: 'Create deployment' }).click();
  await page.locator('fieldset[data-loc="secrets"] .field-error').filter({ hasText: /name/i }).waitFor();
  assert.equal(await page.getByLabel('Name 1').getAttribute('aria-invalid'), 'true');
  await check(page, 'deployment-create-errors');
  noErrors(errors);
});

test('a build is watched on the workflow graph until DEPLOYED', async () => {
  await createThroughForm('ui-good', env('UI_GOOD_REPO'), { ref: 'main' });
  await page.getByText('Deployment ui-good created').waitFor();
  const states = await waitGraph('DEPLOYED');
  for (const s of ['Queue', 'FetchSource', 'ValidateConfig', 'Build', 'Deploy', 'build succeeded']) assert.equal(states[s], 'passed', s);
  for (const s of ['MarkCreateFailed', 'MarkBuildFailed', 'MarkDeployFailed', 'build failed']) assert.equal(states[s], 'skipped', s);
  await page.locator('dd').filter({ hasText: 'READY' }).waitFor();
  assert.ok(await page.getByRole('list', { name: 'Build log' }).getByText('[Deploy]').count() > 0);
  await check(page, 'deployment-detail');
  // The list shows it; a second one of the same name is a conflict.
  await page.getByRole('link', { name: 'Deployments', exact: true }).first().click();
  await page.getByRole('link', { name: 'ui-good', exact: true }).waitFor();
  await check(page, 'deployments');
  await createThroughForm('ui-good', env('UI_GOOD_REPO'));
  await page.locator('.form-error').filter({ hasText: 'Conflict (409)' }).waitFor();
  noErrors(errors);
});

test('a build held in its fetch shows FetchSource running, then DEPLOYED', async () => {
  const control = env('UI_CONTROL_URL');
  await fetch(control + '/hold');
  try {
    await createThroughForm('ui-held', env('UI_HELD_REPO'));
    await assertEventually(async () => (await graphStates(page)).FetchSource === 'running', 30_000, 'FetchSource running');
    const states = await graphStates(page);
    assert.equal(states.Queue, 'passed');
    assert.equal(states.ValidateConfig, 'pending');
    assert.equal(await page.locator('#workflow-graph').getAttribute('data-revision-status'), 'BUILDING');
    await check(page, 'deployment-building');
  } finally {
    await fetch(control + '/release');
  }
  const states = await waitGraph('DEPLOYED');
  assert.equal(states.Deploy, 'passed');
  assert.equal(states['build succeeded'], 'passed');
  noErrors(errors);
});

test('a bad langgraph.json fails the build, shown failed on the graph', async () => {
  await createThroughForm('ui-bad', env('UI_BAD_REPO'));
  const states = await waitGraph('BUILD_FAILED');
  assert.equal(states.Queue, 'passed');
  assert.equal(states.FetchSource, 'passed');
  assert.equal(states.ValidateConfig, 'failed');
  assert.equal(states.Build, 'skipped');
  assert.equal(states.Deploy, 'skipped');
  assert.equal(states.MarkBuildFailed, 'passed');
  assert.equal(states['build failed'], 'failed');
  assert.equal(states['build succeeded'], 'skipped');
  await page.locator('#revision-status').filter({ hasText: 'BUILD_FAILED' }).waitFor();
  await page.getByText(/langgraph\.json/).first().waitFor();
  await check(page, 'deployment-failed');
  noErrors(errors);
});

test('redeploy asks first, then builds a new revision', async () => {
  await page.getByRole('link', { name: 'Deployments', exact: true }).first().click();
  await page.getByRole('link', { name: 'ui-good', exact: true }).click();
  await page.getByRole('heading', { name: 'ui-good' }).waitFor();
  const before = await page.getByRole('region', { name: 'Revisions' }).locator('tbody tr').count();
  await page.getByRole('button', { name: /^Redeploy revision/ }).first().click();
  const dlg = page.getByRole('dialog');
  await dlg.waitFor();
  await dlg.getByRole('button', { name: 'Cancel' }).click();
  await dlg.waitFor({ state: 'detached' });
  assert.equal(await page.getByRole('region', { name: 'Revisions' }).locator('tbody tr').count(), before);
  await page.getByRole('button', { name: /^Redeploy revision/ }).first().click();
  await page.getByRole('dialog').getByRole('button', { name: 'Redeploy' }).click();
  await page.getByText(/redeployed as revision/).waitFor();
  const states = await waitGraph('DEPLOYED');
  assert.equal(states['build succeeded'], 'passed');
  await assertEventually(async () => (await page.getByRole('region', { name: 'Revisions' }).locator('tbody tr').count()) === before + 1);
  await page.getByRole('region', { name: 'Revisions' }).getByRole('cell', { name: 'redeploy', exact: true }).waitFor();
  noErrors(errors);
});

test('delete asks first, then the deployment leaves the list', async () => {
  await page.getByRole('link', { name: 'Deployments', exact: true }).first().click();
  await page.getByRole('link', { name: 'ui-bad', exact: true }).click();
  await page.getByRole('button', { name: 'Delete deployment' }).click();
  const dlg = page.getByRole('dialog', { name: 'Delete ui-bad?' });
  await dlg.waitFor();
  await check(page, 'deployment-delete-confirm');
  await dlg.getByRole('button', { name: 'Cancel' }).click();
  await page.getByRole('heading', { name: 'ui-bad' }).waitFor();
  await page.getByRole('button', { name: 'Delete deployment' }).click();
  await page.getByRole('dialog').getByLabel('Also delete its tracing project').check();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText('Deployment ui-bad is being deleted.').waitFor();
  await page.getByRole('heading', { name: 'Deployments', level: 1 }).waitFor();
  await assertEventually(async () => {
    const list = await apiOK('GET', '/v2/deployments?name_contains=ui-bad');
    return list.resources.every((d) => d.status === 'AWAITING_DELETE');
  });
  noErrors(errors);
});
