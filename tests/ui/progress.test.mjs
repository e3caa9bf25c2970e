// The colouring rules of the workflow graph (ui/progress.js), on the graph
// the server generates from the build workflow's definition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stepStates } from '../../shared/domains/ui/site/ui/progress.js';
import { BASE } from './lib.mjs';

const graph = await (await fetch(BASE + '/ui/workflows/build.json')).json();
const log = (...steps) => steps.map((step) => ({ step, message: '', timestamp: '' }));
const normal = ['Queue', 'FetchSource', 'ValidateConfig', 'Build', 'Deploy'];
const pick = (states, names) => names.map((n) => states[n]);

test('the graph is the build workflow, generated from its definition', () => {
  assert.equal(graph.name, 'build');
  assert.equal(graph.start_at, 'Queue');
  assert.deepEqual(graph.states.map((s) => s.name), [...normal, 'MarkCreateFailed', 'MarkBuildFailed', 'MarkDeployFailed', 'build succeeded', 'build failed']);
  assert.equal(graph.states.find((s) => s.name === 'Build').service, 'codebuild');
  assert.equal(graph.states.find((s) => s.name === 'FetchSource').catch, 'MarkBuildFailed');
});

test('a queued revision runs its first step', () => {
  const s = stepStates(graph, 'QUEUED', []);
  assert.deepEqual(pick(s, normal), ['running', 'pending', 'pending', 'pending', 'pending']);
  assert.equal(s['build succeeded'], 'pending');
});

test('a building revision: the furthest step that logged is running', () => {
  const s = stepStates(graph, 'BUILDING', log('Queue', 'FetchSource', 'FetchSource'));
  assert.deepEqual(pick(s, normal), ['passed', 'running', 'pending', 'pending', 'pending']);
  assert.equal(s.MarkBuildFailed, 'pending');
});

test('a deployed revision passed every step', () => {
  const s = stepStates(graph, 'DEPLOYED', log('Queue', 'FetchSource', 'ValidateConfig', 'Build', 'Deploy'));
  assert.deepEqual(pick(s, normal), ['passed', 'passed', 'passed', 'passed', 'passed']);
  assert.equal(s['build succeeded'], 'passed');
  assert.deepEqual(pick(s, ['MarkCreateFailed', 'MarkBuildFailed', 'MarkDeployFailed', 'build failed']), ['skipped', 'skipped', 'skipped', 'skipped']);
});

test('a build failure: the failing step failed, its handler ran, later steps skipped', () => {
  const s = stepStates(graph, 'BUILD_FAILED', log('Queue', 'FetchSource', 'ValidateConfig', 'ValidateConfig', 'MarkBUILD_FAILED'));
  assert.deepEqual(pick(s, normal), ['passed', 'passed', 'failed', 'skipped', 'skipped']);
  assert.equal(s.MarkBuildFailed, 'passed');
  assert.equal(s.MarkCreateFailed, 'skipped');
  assert.equal(s['build failed'], 'failed');
  assert.equal(s['build succeeded'], 'skipped');
});

test('a create failure without a log fails the first step', () => {
  const s = stepStates(graph, 'CREATE_FAILED', []);
  assert.equal(s.Queue, 'failed');
  assert.equal(s.MarkCreateFailed, 'passed');
});

test('a superseded revision: what ran passed, the rest was skipped', () => {
  const s = stepStates(graph, 'INTERRUPTED', log('Queue', 'FetchSource'));
  assert.deepEqual(pick(s, normal), ['passed', 'passed', 'skipped', 'skipped', 'skipped']);
  assert.equal(s['build failed'], 'skipped');
});

test('an unknown status colours nothing', () => {
  const s = stepStates(graph, 'UNKNOWN', log('Queue'));
  assert.ok(Object.values(s).every((v) => v === 'pending'));
});
