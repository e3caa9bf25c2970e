// The workflow graph: laid out from the definition's graph (ui/workflows/
// {name}.json, generated from the Go definition), drawn as SVG, with each
// state coloured by stepStates. A table lists the same states as text.

import { h, s, clear, uid, tableOf } from './dom.js';
import { chain } from './progress.js';

const W = 168; // node width
const NH = 40; // node height
const PITCH = 60; // row pitch
const COL = [8, 222]; // column x
const TOP = 28;

const LABEL = { passed: 'passed', running: 'running', failed: 'failed', skipped: 'skipped', pending: 'not run yet' };

// layout puts the normal steps in one column with the success end below
// them, each failure handler beside the steps it catches, and the fail end
// below the handlers.
export function layout(graph) {
  const { main, succeed, fail } = chain(graph);
  const pos = new Map();
  main.forEach((st, i) => pos.set(st.name, { x: COL[0], row: i }));
  if (succeed) pos.set(succeed.name, { x: COL[0], row: main.length });
  const handlers = graph.states.filter((st) => st.type === 'Task' && st.failure_only);
  const want = handlers.map((hd) => {
    const rows = main.map((st, i) => (st.catch === hd.name ? i : -1)).filter((r) => r >= 0);
    return { hd, row: rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : main.length };
  }).sort((a, b) => a.row - b.row);
  let minRow = 0;
  for (const w of want) {
    const row = Math.max(w.row, minRow);
    pos.set(w.hd.name, { x: COL[1], row });
    minRow = row + 1;
  }
  if (fail) pos.set(fail.name, { x: COL[1], row: Math.max(minRow, main.length) });
  for (const p of pos.values()) p.y = TOP + p.row * PITCH;
  const rows = Math.max(...[...pos.values()].map((p) => p.row)) + 1;
  return { pos, main, width: COL[1] + W + 24, height: TOP + rows * PITCH };
}

export function renderGraph(graph, states, { label = 'Build workflow' } = {}) {
  const { pos, width, height } = layout(graph);
  const titleId = uid('gt');
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': titleId, 'data-workflow': graph.name });
  svg.append(s('title', { id: titleId }, `${label}: ${graph.states.map((st) => `${st.name} ${LABEL[states[st.name]] || 'not run yet'}`).join(', ')}`));
  const markerId = uid('arrow');
  svg.append(s('defs', {}, s('marker', { id: markerId, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#6b7280' }))));
  const edges = s('g', {});
  const nodes = s('g', {});
  const first = pos.get(graph.start_at);
  if (first) {
    edges.append(s('circle', { cx: first.x + W / 2, cy: 8, r: 5, fill: '#1b1f24' }));
    edges.append(s('path', { class: 'edge', d: `M${first.x + W / 2},13 V${first.y}`, 'marker-end': `url(#${markerId})` }));
  }
  const busX = COL[1] + W + 12;
  for (const st of graph.states) {
    const a = pos.get(st.name);
    if (!a) continue;
    const b = st.next && pos.get(st.next);
    if (b) {
      let d;
      if (a.x === b.x && !st.failure_only) d = `M${a.x + W / 2},${a.y + NH} V${b.y}`;
      else d = `M${a.x + W},${a.y + NH / 2} H${busX} V${b.y + NH / 2} H${b.x + W}`;
      edges.append(s('path', { class: 'edge', d, 'marker-end': `url(#${markerId})` }));
    }
    const c = st.catch && pos.get(st.catch);
    if (c) {
      const mid = (COL[0] + W + COL[1]) / 2;
      edges.append(s('path', { class: 'edge catch', d: `M${a.x + W},${a.y + NH / 2} H${mid} V${c.y + NH / 2} H${c.x}`, 'marker-end': `url(#${markerId})` }));
    }
    const state = states[st.name] || 'pending';
    nodes.append(s('g', { class: `node st-${state}`, 'data-state-name': st.name, 'data-state': state },
      s('rect', { x: a.x, y: a.y, width: W, height: NH, rx: st.type === 'Task' ? 6 : NH / 2 }),
      s('text', { x: a.x + 10, y: a.y + 17 }, st.name),
      s('text', { class: 'state', x: a.x + 10, y: a.y + 32 }, LABEL[state])));
  }
  svg.append(edges, nodes);
  return svg;
}

export function legend() {
  return h('ul', { class: 'legend', 'aria-label': 'Legend' },
    ['passed', 'running', 'failed', 'skipped', 'pending'].map((k) => h('li', {}, h('span', { class: `sw ${k}`, 'aria-hidden': 'true' }), LABEL[k])),
    h('li', {}, '- - - on failure'));
}

export function stepTable(graph, states) {
  return tableOf('Workflow states', ['State', 'Progress', 'Retries', 'On failure', 'What it does'],
    graph.states.map((st) => h('tr', { 'data-state-name': st.name },
      h('th', { scope: 'row', text: st.name }),
      h('td', { text: LABEL[states[st.name]] || 'not run yet' }),
      h('td', { text: st.max_attempts ? `${st.max_attempts} attempts, from ${st.backoff_seconds}s` : '—' }),
      h('td', { text: st.catch || '—' }),
      h('td', { text: st.comment || (st.type === 'Succeed' ? 'The revision is live' : st.type === 'Fail' ? 'The revision failed' : '') }))));
}

// mountGraph fills el with the graph, its legend and its table.
export function mountGraph(el, graph, states) {
  clear(el, h('div', { class: 'graph' }, renderGraph(graph, states)), legend(),
    h('details', {}, h('summary', { text: 'States as a table' }), stepTable(graph, states)));
}
