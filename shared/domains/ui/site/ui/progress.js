// stepStates colours a workflow graph from a revision: its status and its
// build log (each line names the step that wrote it). Pure, so it is tested
// on its own (tests/ui/progress.test.mjs).
//
// The rules: the normal steps form a chain from start_at; the furthest step
// that wrote to the log is where the build is (or stopped).
//   DEPLOYED: every normal step and the success end passed.
//   *_FAILED: the steps before it passed, it failed, its failure handler
//     passed (it marked the revision), the fail end is reached (failed).
//   SKIPPED, INTERRUPTED: the steps that ran passed, the rest were skipped.
//   in progress: the steps before it passed, it is running.
// States never reached are "skipped" once the revision is final and
// "pending" while it builds.

export const IN_PROGRESS = new Set(['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING']);
export const FAILED = new Set(['CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED']);
export const HALTED = new Set(['SKIPPED', 'INTERRUPTED']);

export function chain(graph) {
  const byName = new Map(graph.states.map((s) => [s.name, s]));
  const main = [];
  const seen = new Set();
  let s = byName.get(graph.start_at);
  while (s && s.type === 'Task' && !seen.has(s.name)) {
    seen.add(s.name);
    main.push(s);
    s = byName.get(s.next);
  }
  return { byName, main, succeed: graph.states.find((x) => x.type === 'Succeed'), fail: graph.states.find((x) => x.type === 'Fail') };
}

export function stepStates(graph, status, logs = []) {
  const { main, succeed, fail } = chain(graph);
  const index = new Map(main.map((s, i) => [s.name, i]));
  let last = -1;
  for (const l of logs) {
    const i = index.get(l.step);
    if (i !== undefined && i > last) last = i;
  }
  const out = {};
  const final = !IN_PROGRESS.has(status);
  const unreached = status === 'UNKNOWN' || !final ? 'pending' : 'skipped';
  for (const s of graph.states) out[s.name] = unreached;
  if (status === 'DEPLOYED') {
    for (const s of main) out[s.name] = 'passed';
    if (succeed) out[succeed.name] = 'passed';
  } else if (FAILED.has(status)) {
    const at = Math.max(last, 0);
    main.forEach((s, i) => { if (i < at) out[s.name] = 'passed'; });
    const failed = main[at];
    if (failed) {
      out[failed.name] = 'failed';
      if (failed.catch) out[failed.catch] = 'passed';
    }
    if (fail) out[fail.name] = 'failed';
  } else if (HALTED.has(status)) {
    main.forEach((s, i) => { if (i <= last) out[s.name] = 'passed'; });
  } else if (IN_PROGRESS.has(status)) {
    const at = Math.max(last, 0);
    main.forEach((s, i) => {
      if (i < at) out[s.name] = 'passed';
      else if (i === at) out[s.name] = 'running';
    });
  }
  return out;
}
