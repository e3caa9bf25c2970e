// Threads of a deployment (its thread API at /deployments/{id}): the list
// with status filter, sorting and paging; the create form; a thread's page
// with its state as a conversation, its history and copy.

import { get, call, post, del, atLeast, workspaceRole, describe } from './api.js';
import { h, clear, field, select, formError, showError, submitting, confirmDialog, loading, errorBox, time, badge, tableOf, json, parseJSONField, clearErrors } from './dom.js';

const enc = encodeURIComponent;
const STATUSES = ['idle', 'busy', 'interrupted', 'error'];
const SORTS = [['updated_at', 'Updated'], ['created_at', 'Created'], ['thread_id', 'Thread ID'], ['status', 'Status']];
const SIZES = ['10', '25', '50', '100'];

function base(id) {
  return `/deployments/${enc(id)}`;
}

function crumbs(id, dep, ...more) {
  return h('p', { class: 'crumbs' }, h('a', { href: '#/deployments', text: 'Deployments' }), ' / ',
    h('a', { href: `#/deployments/${id}`, text: dep ? dep.name : 'Deployment' }), ' / ',
    h('a', { href: `#/deployments/${id}/threads`, text: 'Threads' }), more.length ? [' / ', more] : null);
}

// The deployment's name (for headings); the thread API works without it.
async function deployment(id, signal) {
  try {
    return await get(`/v2/deployments/${enc(id)}`, { signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    return null;
  }
}

export async function list({ main, params, query, signal, setTitle }) {
  const [id] = params;
  const st = {
    status: STATUSES.includes(query.get('status')) ? query.get('status') : '',
    sort_by: SORTS.some(([v]) => v === query.get('sort_by')) ? query.get('sort_by') : 'updated_at',
    sort_order: query.get('sort_order') === 'asc' ? 'asc' : 'desc',
    limit: SIZES.includes(query.get('limit')) ? query.get('limit') : '10',
    offset: Math.max(0, parseInt(query.get('offset') || '0', 10) || 0),
  };
  const href = (changes) => {
    const q = new URLSearchParams({ ...st, offset: 0, ...changes });
    if (!q.get('status')) q.delete('status');
    return `#/deployments/${id}/threads?${q}`;
  };
  const canWrite = atLeast(workspaceRole(), 'User');
  const statusSel = select([['', 'Any status'], ...STATUSES.map((s) => [s, s])], st.status, { name: 'status' });
  const sortSel = select(SORTS, st.sort_by, { name: 'sort_by' });
  const orderSel = select([['desc', 'Descending'], ['asc', 'Ascending']], st.sort_order, { name: 'sort_order' });
  const sizeSel = select(SIZES, st.limit, { name: 'limit' });
  const controls = h('form', { class: 'toolbar', 'aria-label': 'Filter and sort threads' },
    field('Status', statusSel), field('Sort by', sortSel), field('Order', orderSel), field('Per page', sizeSel));
  controls.addEventListener('change', () => {
    location.hash = href({ status: statusSel.value, sort_by: sortSel.value, sort_order: orderSel.value, limit: sizeSel.value });
  });
  controls.addEventListener('submit', (e) => e.preventDefault());
  const body = h('div', {});
  const title = h('h1', { text: 'Threads' });
  const head = crumbs(id, null);
  clear(main, head, title,
    canWrite ? h('div', { class: 'actions' }, h('a', { class: 'button primary', href: `#/deployments/${id}/threads/new`, text: 'Create thread' })) : null,
    controls, body);
  setTitle('Threads');
  const [dep, res] = await Promise.all([
    deployment(id, signal),
    loading(body, 'threads', () => call('POST', `${base(id)}/threads/search`, {
      body: { limit: Number(st.limit), offset: st.offset, sort_by: st.sort_by, sort_order: st.sort_order, ...(st.status ? { status: st.status } : {}) }, signal,
    })),
  ]);
  if (dep) {
    title.textContent = `Threads of ${dep.name}`;
    head.replaceWith(crumbs(id, dep));
    setTitle(`Threads of ${dep.name}`);
  }
  if (!res) return;
  const threads = res.data;
  const total = Number(res.headers.get('X-Pagination-Total') || threads.length);
  const nextOffset = res.headers.get('X-Pagination-Next');
  const sortHead = (col, label) => {
    const active = st.sort_by === col;
    const order = active && st.sort_order === 'desc' ? 'asc' : 'desc';
    return h('th', { scope: 'col', 'aria-sort': active ? (st.sort_order === 'asc' ? 'ascending' : 'descending') : null },
      h('a', { href: href({ sort_by: col, sort_order: active ? order : st.sort_order }), title: `Sort by ${label}` }, label,
        active ? h('span', { 'aria-hidden': 'true', text: st.sort_order === 'asc' ? ' ▲' : ' ▼' }) : null));
  };
  const rows = threads.map((t) => h('tr', {},
    h('td', { class: 'id' }, h('a', { href: `#/deployments/${id}/threads/${t.thread_id}`, text: t.thread_id })),
    h('td', {}, badge(t.status)),
    h('td', { text: (t.metadata && t.metadata.graph_id) || '—' }),
    h('td', {}, time(t.created_at)),
    h('td', {}, time(t.updated_at))));
  const from = threads.length ? st.offset + 1 : 0;
  clear(body,
    threads.length ? tableOf('Threads', [sortHead('thread_id', 'Thread ID'), sortHead('status', 'Status'), 'Graph', sortHead('created_at', 'Created'), sortHead('updated_at', 'Updated')], rows)
      : h('p', { text: st.status ? `No ${st.status} threads.` : 'No threads yet.' }),
    h('nav', { class: 'pager', 'aria-label': 'Pages of threads' },
      st.offset > 0 ? h('a', { href: href({ offset: Math.max(0, st.offset - Number(st.limit)) }), text: 'Previous page' }) : null,
      h('span', { id: 'thread-range', text: `${from}–${st.offset + threads.length} of ${total}` }),
      nextOffset ? h('a', { href: href({ offset: nextOffset }), text: 'Next page' }) : null));
}

export async function create({ main, params, signal, go, notify, setTitle }) {
  const [id] = params;
  const head = crumbs(id, null, 'New');
  clear(main, head, h('h1', { text: 'Create thread' }));
  setTitle('Create thread');
  if (!atLeast(workspaceRole(), 'User')) {
    main.append(h('p', { class: 'warn', text: 'Creating threads needs the User role in this workspace.' }));
    return;
  }
  const graphSel = select([['', 'No graph']], '', { name: 'graph_id' });
  const graphField = field('Graph', graphSel, { loc: 'metadata.graph_id', hint: 'Sets metadata.graph_id (a graph of the deployment\'s active revision). An initial state needs a graph.' });
  const meta = h('textarea', { name: 'metadata', rows: 4, spellcheck: 'false', placeholder: '{"user": "ada"}' });
  const metaField = field('Metadata (JSON object)', meta, { loc: 'metadata' });
  const state = h('textarea', { name: 'values', rows: 6, spellcheck: 'false', placeholder: '{"messages": [{"type": "human", "content": "Hello"}]}' });
  const stateField = field('Initial state (JSON object of values)', state, { loc: 'supersteps', hint: 'Written as the thread\'s first update (as_node __start__), through the graph\'s reducers.' });
  const err = formError();
  const form = h('form', { class: 'form', novalidate: true }, err, graphField, metaField, stateField,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Create thread' }), h('a', { class: 'button', href: `#/deployments/${id}/threads`, text: 'Cancel' })));
  main.append(form);
  const dep = await deployment(id, signal);
  if (dep) head.replaceWith(crumbs(id, dep, 'New'));
  if (dep && dep.active_revision_id) {
    try {
      const rev = await get(`/v2/deployments/${enc(id)}/revisions/${enc(dep.active_revision_id)}`, { signal });
      for (const g of rev.graphs || []) graphSel.append(h('option', { value: g, text: g }));
      if ((rev.graphs || []).length === 1) graphSel.value = rev.graphs[0];
    } catch (e) {
      if (e.name !== 'AbortError') graphField.append(h('p', { class: 'hint', text: `Graphs unavailable: ${describe(e)}` }));
    }
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const m = parseJSONField(metaField);
    const v = parseJSONField(stateField);
    if (!m.ok || !v.ok) return;
    const body = {};
    const metadata = m.value === undefined ? {} : m.value;
    const ownGraph = metadata && typeof metadata === 'object' && !Array.isArray(metadata) && 'graph_id' in metadata;
    // 422s about metadata.graph_id belong to the graph field only when
    // the graph came from it.
    graphField.dataset.loc = ownGraph ? '' : 'metadata.graph_id';
    if (graphSel.value && !ownGraph && metadata && typeof metadata === 'object' && !Array.isArray(metadata)) metadata.graph_id = graphSel.value;
    if (m.value !== undefined || graphSel.value) body.metadata = metadata;
    if (v.value !== undefined) body.supersteps = [{ updates: [{ values: v.value, as_node: '__start__' }] }];
    await submitting(form, 'Creating…', async () => {
      try {
        const t = await post(`${base(id)}/threads`, body);
        notify(`Thread ${t.thread_id} created.`);
        go(`#/deployments/${id}/threads/${t.thread_id}`);
      } catch (e2) {
        showError(form, e2);
      }
    });
  });
}

export async function detail({ main, params, signal, go, notify, setTitle }) {
  const [id, tid] = params;
  const canWrite = atLeast(workspaceRole(), 'User');
  const path = `${base(id)}/threads/${enc(tid)}`;
  const head = h('div', {});
  const stateSec = h('section', {});
  const histSec = h('section', {});
  const crumbEl = crumbs(id, null, tid.slice(0, 8));
  clear(main, crumbEl, head, stateSec, histSec);
  const [dep, thread] = await Promise.all([deployment(id, signal), loading(head, 'the thread', () => get(path, { signal }))]);
  if (dep) crumbEl.replaceWith(crumbs(id, dep, tid.slice(0, 8)));
  if (!thread) {
    setTitle('Thread');
    return;
  }
  clear(head, h('h1', { text: `Thread ${thread.thread_id}` }),
    h('dl', { class: 'facts' },
      h('dt', { text: 'Status' }), h('dd', {}, badge(thread.status)),
      h('dt', { text: 'Graph' }), h('dd', { text: (thread.metadata && thread.metadata.graph_id) || '—' }),
      h('dt', { text: 'Created' }), h('dd', {}, time(thread.created_at)),
      h('dt', { text: 'Updated' }), h('dd', {}, time(thread.updated_at)),
      h('dt', { text: 'Metadata' }), h('dd', {}, h('pre', { tabindex: '0', text: json(thread.metadata || {}) }))),
    canWrite ? h('div', { class: 'actions' },
      h('button', { type: 'button', text: 'Copy thread', onclick: copy }),
      h('button', { type: 'button', class: 'danger', text: 'Delete thread', onclick: remove })) : null);
  setTitle(`Thread ${thread.thread_id.slice(0, 8)}`);

  async function copy(e) {
    const btn = e.currentTarget;
    btn.disabled = true;
    btn.textContent = 'Copying…';
    try {
      const t = await post(`${path}/copy`);
      notify(`Copied thread ${thread.thread_id} to ${t.thread_id}: the copy has the same history.`);
      go(`#/deployments/${id}/threads/${t.thread_id}`);
    } catch (err) {
      btn.disabled = false;
      btn.textContent = 'Copy thread';
      head.append(errorBox(err));
    }
  }

  async function remove() {
    const ok = await confirmDialog({ title: 'Delete this thread?', message: `Thread ${thread.thread_id} and its history are deleted. This cannot be undone.`, confirm: 'Delete' });
    if (!ok) return;
    try {
      await del(path);
      notify(`Thread ${thread.thread_id} deleted.`);
      go(`#/deployments/${id}/threads`);
    } catch (err) {
      head.append(errorBox(err));
    }
  }

  const snap = await loading(stateSec, 'the current state', () => get(`${path}/state`, { signal }));
  if (snap) renderState(stateSec, snap);
  renderHistory(histSec, path, signal);
}

function renderState(sec, snap) {
  const values = snap.values || {};
  const messages = Array.isArray(values.messages) ? values.messages : null;
  const others = Object.keys(values).filter((k) => k !== 'messages');
  clear(sec, h('h2', { id: 'state-h', text: 'Current state' }),
    h('dl', { class: 'facts' },
      h('dt', { text: 'Checkpoint' }), h('dd', { class: 'mono', text: snap.checkpoint_id || 'none yet' }),
      h('dt', { text: 'Step' }), h('dd', { text: snap.metadata && snap.metadata.step !== undefined ? String(snap.metadata.step) : '—' }),
      h('dt', { text: 'Next' }), h('dd', { text: (snap.next || []).join(', ') || 'nothing pending' })),
    messages ? [h('h3', { text: `Conversation (${messages.length} messages)` }), conversation(messages)] : h('p', { class: 'note', text: 'The state holds no messages.' }),
    others.length ? [h('h3', { text: 'Other values' }), h('dl', { class: 'facts' }, others.map((k) => [h('dt', { text: k }), h('dd', {}, h('pre', { tabindex: '0', text: json(values[k]) }))]))] : null,
    h('details', { id: 'raw-state' }, h('summary', { text: 'Raw JSON of the state' }), h('pre', { tabindex: '0', text: json(snap) })));
}

const WHO = { human: 'Human', user: 'Human', ai: 'AI', assistant: 'AI', system: 'System', developer: 'System', tool: 'Tool', function: 'Tool' };

function conversation(messages) {
  return h('ol', { class: 'chat', 'aria-label': 'Conversation' }, messages.map((m) => {
    const type = String((m && (m.type || m.role)) || 'message');
    const who = WHO[type] || type;
    const cls = who === 'Human' ? 'human' : who === 'Tool' ? 'tool' : 'ai';
    const calls = (m && m.tool_calls) || [];
    return h('li', { class: `msg ${cls}` },
      h('div', { class: 'who', text: who + (m && m.name ? ` · ${m.name}` : '') }),
      h('div', { class: 'body', text: contentText(m && m.content) }),
      calls.length ? h('div', { class: 'note' }, calls.map((c) => h('div', { text: `Tool call ${c.name}(${JSON.stringify(c.args || {})})` }))) : null);
  }));
}

function contentText(c) {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => (typeof p === 'string' ? p : p && p.type === 'text' ? p.text : JSON.stringify(p))).join('\n');
  return c === undefined || c === null ? '' : JSON.stringify(c);
}

async function renderHistory(sec, path, signal) {
  const tbody = h('tbody', {});
  const more = h('button', { type: 'button', text: 'Load older checkpoints', hidden: true });
  const table = h('div', { class: 'table-wrap', role: 'region', 'aria-label': 'History', tabindex: '0' },
    h('table', {}, h('thead', {}, h('tr', {}, ['Step', 'Source', 'Writes', 'Checkpoint', 'Created'].map((c) => h('th', { scope: 'col', text: c })))), tbody));
  const status = h('div', {});
  clear(sec, h('h2', { id: 'history-h', text: 'History' }), h('p', { class: 'note', text: 'Every checkpoint, newest first.' }), status, table, h('div', { class: 'actions' }, more));
  let before = null;
  const load = async () => {
    more.disabled = true;
    const page = await loading(status, 'history', () => post(`${path}/history`, before ? { limit: 10, before } : { limit: 10 }, { signal }));
    more.disabled = false;
    if (!page) return;
    clear(status);
    if (!page.length && !before) status.append(h('p', { text: 'No checkpoints yet.' }));
    for (const cp of page) {
      const md = cp.metadata || {};
      const writes = md.writes || {};
      tbody.append(h('tr', {},
        h('td', { text: md.step !== undefined ? String(md.step) : '—' }),
        h('td', { text: md.source || '—' }),
        h('td', {}, Object.keys(writes).length ? h('details', {}, h('summary', { text: Object.keys(writes).join(', ') }), h('pre', { tabindex: '0', text: json(writes) })) : '—'),
        h('td', { class: 'id', text: cp.checkpoint_id || '—' }),
        h('td', {}, time(cp.created_at))));
    }
    before = page.length ? page[page.length - 1].checkpoint_id : before;
    more.hidden = page.length < 10;
  };
  more.addEventListener('click', load);
  await load();
}
