// The shell: sign-in, the header (navigation, workspace, sign-out), the
// hash router and the busy indicator. Views are loaded on first use.

import { loadConfig, session, call, onBusy, onUnauthorized, describe, ApiError } from './api.js';
import { h, clear, field, formError, showError, submitting, select } from './dom.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const account = document.getElementById('account');
const busyEl = document.getElementById('busy');
const noticeEl = document.getElementById('notice');

let busyTimer = null;
onBusy((n) => {
  // A short delay keeps fast answers from flashing the indicator.
  clearTimeout(busyTimer);
  if (n > 0) busyTimer = setTimeout(() => { busyEl.textContent = 'Loading…'; }, 120);
  else busyEl.textContent = '';
});

let pendingNotice = '';
export function notify(msg) {
  pendingNotice = msg;
}
function showNotice() {
  noticeEl.hidden = !pendingNotice;
  noticeEl.textContent = pendingNotice;
  pendingNotice = '';
}

let signInMessage = '';
onUnauthorized((err) => {
  signInMessage = describe(err);
  const here = location.hash;
  go('#/signin' + (here && !here.startsWith('#/signin') ? '?next=' + encodeURIComponent(here) : ''));
});

export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

const routes = [
  [/^\/signin$/, () => signIn, 'render', false],
  [/^\/deployments$/, () => import('./deployments.js'), 'list'],
  [/^\/deployments\/new$/, () => import('./deployments.js'), 'create'],
  [/^\/deployments\/([^/]+)$/, () => import('./deployments.js'), 'detail'],
  [/^\/deployments\/([^/]+)\/revisions\/([^/]+)$/, () => import('./deployments.js'), 'detail'],
  [/^\/deployments\/([^/]+)\/threads$/, () => import('./threads.js'), 'list'],
  [/^\/deployments\/([^/]+)\/threads\/new$/, () => import('./threads.js'), 'create'],
  [/^\/deployments\/([^/]+)\/threads\/([^/]+)$/, () => import('./threads.js'), 'detail'],
  [/^\/org$/, () => import('./org.js'), 'settings'],
  [/^\/org\/(invites|members|scim-tokens|audit)$/, () => import('./org.js'), 'section'],
];

let current = null; // AbortController of the view on screen

async function route() {
  const raw = location.hash.replace(/^#/, '') || '/deployments';
  const [path, qs] = raw.split('?');
  const query = new URLSearchParams(qs || '');
  if (current) current.abort();
  current = new AbortController();
  const signal = current.signal;
  const s = session.get();
  let match = null;
  for (const [re, load, fn, needsSession = true] of routes) {
    const m = path.match(re);
    if (m) { match = { load, fn, needsSession, params: m.slice(1).map(decodeURIComponent) }; break; }
  }
  if (!match) {
    go(s ? '#/deployments' : '#/signin');
    return;
  }
  if (match.needsSession && !s) {
    go('#/signin?next=' + encodeURIComponent('#' + raw));
    return;
  }
  renderShell(path);
  showNotice();
  clear(main, h('p', { class: 'loading', role: 'status', text: 'Loading…' }));
  main.setAttribute('aria-busy', 'true');
  try {
    const mod = await match.load();
    if (signal.aborted) return;
    const view = typeof mod === 'function' ? mod : mod[match.fn];
    clear(main);
    main.removeAttribute('aria-busy');
    await view({ main, params: match.params, query, signal, path, go, notify, setTitle });
  } catch (err) {
    if (err && err.name === 'AbortError') return;
    main.removeAttribute('aria-busy');
    clear(main, h('h1', { text: 'Something went wrong' }), h('div', { class: 'error', role: 'alert', text: describe(err) }));
  }
}

let lastPath = null;
function setTitle(text) {
  document.title = `${text} · agentplane`;
  // A new page moves the focus to its heading, so keyboard and screen
  // reader users start there (not on a stale control).
  if (lastPath !== location.hash) {
    lastPath = location.hash;
    const h1 = main.querySelector('h1');
    if (h1) { h1.tabIndex = -1; h1.focus({ preventScroll: false }); }
  }
}

function renderShell(path) {
  const s = session.get();
  nav.hidden = account.hidden = !s;
  if (!s) return;
  const link = (href, text, active) => h('a', { href, text, 'aria-current': active ? 'page' : null });
  clear(nav,
    link('#/deployments', 'Deployments', path.startsWith('/deployments')),
    link('#/org', 'Organization', path.startsWith('/org')));
  const ws = s.workspaces.find((w) => w.id === s.workspace);
  const parts = [];
  if (s.workspaces.length > 1) {
    const sel = select(s.workspaces.map((w) => [w.id, `${w.display_name} (${w.role})`]), s.workspace, { id: 'workspace-switch' });
    sel.addEventListener('change', () => {
      session.set({ ...s, workspace: sel.value });
      notify(`Switched to workspace ${sel.selectedOptions[0].textContent}.`);
      go('#/deployments');
    });
    parts.push(h('label', { for: 'workspace-switch', class: 'visually-hidden', text: 'Workspace' }), sel);
  } else if (ws) {
    parts.push(h('span', { text: `${ws.display_name} (${ws.role})` }));
  }
  parts.push(h('button', {
    type: 'button', text: 'Sign out', onclick: () => {
      session.clear();
      signInMessage = 'Signed out. The key is forgotten by this tab.';
      go('#/signin');
    },
  }));
  clear(account, parts);
}

// signIn checks the key (GET /api/v1/workspaces), lets the person choose a
// workspace when the key reaches several, and learns whether the key is an
// organization admin (GET /api/v1/api-key answers 403 otherwise).
async function signIn({ main, query, setTitle }) {
  const next = query.get('next') || '#/deployments';
  const key = h('input', { type: 'password', name: 'api_key', autocomplete: 'off', spellcheck: 'false', required: true, autofocus: true });
  const keyField = field('API key', key, { hint: 'Kept in this browser tab only (sessionStorage) and sent as X-Api-Key.', loc: 'api_key' });
  const err = formError();
  const form = h('form', { class: 'form', novalidate: true }, err, keyField, h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Sign in' })));
  const message = signInMessage ? h('p', { class: 'warn', role: 'status', text: signInMessage }) : null;
  signInMessage = '';
  clear(main, h('h1', { text: 'Sign in' }), message, form);
  setTitle('Sign in');
  key.focus();
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const k = key.value.trim();
    if (!k) {
      showError(form, null);
      err.textContent = 'Enter an API key.';
      key.setAttribute('aria-invalid', 'true');
      key.focus();
      return;
    }
    await submitting(form, 'Signing in…', async () => {
      try {
        const { data: workspaces } = await call('GET', '/api/v1/workspaces', { key: k, workspace: '', redirect401: false });
        if (!workspaces.length) throw new ApiError(403, 'This key reaches no workspace.');
        let orgAdmin = false;
        try {
          await call('GET', '/api/v1/api-key', { key: k, workspace: '', redirect401: false });
          orgAdmin = true;
        } catch (e2) {
          if (!(e2 instanceof ApiError) || e2.status !== 403) throw e2;
        }
        const base = { key: k, orgAdmin, workspaces: workspaces.map((w) => ({ id: w.id, display_name: w.display_name, role: w.role })) };
        if (workspaces.length === 1) {
          session.set({ ...base, workspace: workspaces[0].id });
          go(next);
          return;
        }
        chooseWorkspace(main, base, next, setTitle);
      } catch (e2) {
        showError(form, e2);
        if (e2.status === 401) err.textContent = 'That API key was not accepted (401). Check it and try again.';
      }
    });
  });
}

function chooseWorkspace(main, base, next, setTitle) {
  const sel = select(base.workspaces.map((w) => [w.id, `${w.display_name} (${w.role})`]), base.workspaces[0].id, { name: 'workspace' });
  const form = h('form', { class: 'form' },
    h('p', { text: 'This key reaches several workspaces. Requests to the control plane name the one you choose (X-Tenant-Id); you can switch later in the header.' }),
    field('Workspace', sel),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Continue' })));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    session.set({ ...base, workspace: sel.value });
    go(next);
  });
  clear(main, h('h1', { text: 'Choose a workspace' }), form);
  lastPath = null;
  setTitle('Choose a workspace');
}

window.addEventListener('hashchange', route);
await loadConfig();
route();

