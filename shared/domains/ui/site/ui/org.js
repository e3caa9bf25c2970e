// Organization access: the JIT and invites switches, the default SSO role
// and workspaces, invites, members, SCIM tokens and the audit log. Only
// organization admins change anything; other keys see the settings and
// nothing they could not use.

import { get, patch, post, del, session, apiURL } from './api.js';
import { h, clear, field, group, select, formError, showError, submitting, confirmDialog, loading, errorBox, time, badge, tableOf, json, clearErrors } from './dom.js';

const ROLES = ['Viewer', 'User', 'Editor', 'Admin'];
const SECTIONS = [['', 'Settings'], ['invites', 'Invites'], ['members', 'Members'], ['scim-tokens', 'SCIM tokens'], ['audit', 'Audit log']];

function subnav(current) {
  const admin = session.get().orgAdmin;
  return h('nav', { class: 'subnav', 'aria-label': 'Organization' },
    SECTIONS.filter(([k]) => admin || k === '').map(([k, label]) =>
      h('a', { href: k ? `#/org/${k}` : '#/org', text: label, 'aria-current': k === current ? 'page' : null })));
}

async function workspaces(signal) {
  return get('/api/v1/workspaces', { signal, workspace: '' });
}

export async function settings({ main, signal, setTitle }) {
  const admin = session.get().orgAdmin;
  const orgSec = h('section', {});
  const ssoSec = h('section', {});
  clear(main, h('h1', { text: 'Organization' }), subnav(''), orgSec, ssoSec);
  setTitle('Organization');
  if (!admin) main.insertBefore(h('p', { class: 'note', text: 'Your API key is not an organization admin: you can read these settings; changing them, invites, members, SCIM tokens and the audit log are for admins.' }), orgSec);
  const org = await loading(orgSec, 'the organization', () => get('/api/v1/organizations/current/info', { signal, workspace: '' }));
  if (org) renderOrg(orgSec, org, admin);
  const [sso, wss] = await Promise.all([
    loading(ssoSec, 'the default SSO settings', () => get('/api/v1/orgs/current/sso-settings', { signal, workspace: '' })),
    workspaces(signal).catch(() => []),
  ]);
  if (sso) renderSSO(ssoSec, sso, wss, admin);
}

function renderOrg(sec, org, admin) {
  const note = h('div', {});
  const sw = (key, label, hint) => {
    const effective = org['effective_' + key];
    const eff = effective !== undefined && effective !== org[key] ? h('p', { class: 'hint', text: `In effect: ${effective ? 'on' : 'off'} (self-hosted rules)` }) : null;
    if (!admin) {
      return h('div', { class: 'switch' }, h('span', { class: 'label', text: `${label}:` }), badge(org[key] ? 'on' : 'off'), eff);
    }
    const input = h('input', { type: 'checkbox', role: 'switch', name: key, checked: org[key] });
    input.addEventListener('change', async () => {
      input.disabled = true;
      clear(note, h('p', { class: 'loading', role: 'status', text: 'Saving…' }));
      try {
        const updated = await patch('/api/v1/organizations/current/info', { [key]: input.checked }, { workspace: '' });
        Object.assign(org, updated);
        renderOrg(sec, org, admin);
        sec.querySelector(`input[name="${key}"]`).focus();
        clear(sec.querySelector('.org-note'), h('p', { class: 'notice', role: 'status', text: `${label} is now ${updated[key] ? 'on' : 'off'}.` }));
      } catch (e) {
        input.checked = !input.checked;
        input.disabled = false;
        clear(note, errorBox(e));
      }
    });
    return h('div', {}, field(label, input, { inline: true, hint }), eff);
  };
  note.className = 'org-note';
  clear(sec, h('h2', { id: 'org-h', text: org.display_name }),
    h('dl', { class: 'facts' },
      h('dt', { text: 'SSO login slug' }), h('dd', { class: 'mono', text: org.sso_login_slug || '—' }),
      h('dt', { text: 'Organization ID' }), h('dd', { class: 'mono', text: org.id })),
    sw('jit_provisioning_enabled', 'Just-in-time provisioning', 'Users are added at their first SSO sign-in with the default role and workspaces.'),
    sw('invites_enabled', 'Invites', 'Admins may invite users by email.'),
    note);
}

function renderSSO(sec, sso, wss, admin) {
  const names = new Map(wss.map((w) => [w.id, w.display_name]));
  const title = h('h2', { id: 'sso-h', text: 'Default SSO role and workspaces' });
  const intro = h('p', { class: 'note', text: `Used for just-in-time provisioning.${sso.configured ? '' : ' Not configured yet: these are the defaults.'}` });
  if (!admin) {
    clear(sec, title, intro, h('dl', { class: 'facts' },
      h('dt', { text: 'Role' }), h('dd', { text: sso.default_workspace_role }),
      h('dt', { text: 'Workspaces' }), h('dd', { text: sso.default_workspace_ids.map((id) => names.get(id) || id).join(', ') })));
    return;
  }
  const role = select(ROLES, sso.default_workspace_role, { name: 'default_workspace_role' });
  const ids = new Set(sso.default_workspace_ids);
  const all = [...wss.map((w) => w.id), ...sso.default_workspace_ids.filter((id) => !names.has(id))];
  const boxes = all.map((id) => {
    const cb = h('input', { type: 'checkbox', name: 'default_workspace_ids', value: id, checked: ids.has(id), id: `ws-${id}` });
    return h('div', { class: 'field inline' }, cb, h('label', { for: cb.id, text: names.get(id) || id }));
  });
  const err = formError();
  const form = h('form', { class: 'form', novalidate: true }, err,
    field('Default role', role, { loc: 'default_workspace_role' }),
    group('Default workspaces', boxes, { loc: 'default_workspace_ids' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Save SSO defaults' })));
  const saved = h('div', { role: 'status' });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const chosen = [...form.querySelectorAll('input[name="default_workspace_ids"]:checked')].map((c) => c.value);
    await submitting(form, 'Saving…', async () => {
      try {
        const out = await patch('/api/v1/orgs/current/sso-settings', { default_workspace_role: role.value, default_workspace_ids: chosen }, { workspace: '' });
        clearErrors(form);
        clear(saved, h('p', { class: 'notice', text: `Saved: ${out.default_workspace_role} in ${out.default_workspace_ids.length} workspace(s).` }));
      } catch (e2) {
        clear(saved);
        showError(form, e2);
      }
    });
  });
  clear(sec, title, intro, form, saved);
}

export async function section(ctx) {
  const which = ctx.params[0];
  const label = SECTIONS.find(([k]) => k === which)[1];
  clear(ctx.main, h('h1', { text: label }), subnav(which));
  ctx.setTitle(label);
  if (!session.get().orgAdmin) {
    ctx.main.append(h('p', { class: 'warn', text: `${label} are for organization admins; this API key is not one.` }));
    return;
  }
  const body = h('div', {});
  ctx.main.append(body);
  await { invites, members, 'scim-tokens': scimTokens, audit }[which](body, ctx);
}

function roleRows(wss, prefix) {
  return wss.map((w) => {
    const sel = select([['', 'No access'], ...ROLES.map((r) => [r, r])], '', { 'data-workspace': w.id, id: `${prefix}-${w.id}` });
    return h('div', { class: 'row' }, h('label', { for: sel.id, text: w.display_name }), sel);
  });
}

function chosenRoles(form) {
  return [...form.querySelectorAll('select[data-workspace]')].filter((s) => s.value).map((s) => ({ workspace_id: s.dataset.workspace, role: s.value }));
}

// pager lists a cursor-paged collection with a "Load more" button.
function pager(container, fetchPage, renderRows, label, head) {
  const tbody = h('tbody', {});
  const status = h('div', {});
  const more = h('button', { type: 'button', text: 'Load more', hidden: true });
  let cursor = null;
  const load = async () => {
    more.disabled = true;
    const page = await loading(status, label.toLowerCase(), () => fetchPage(cursor));
    more.disabled = false;
    if (!page) return;
    clear(status);
    if (!page.items.length && !cursor) status.append(h('p', { text: `No ${label.toLowerCase()}.` }));
    tbody.append(...renderRows(page.items));
    cursor = page.next_cursor;
    more.hidden = !cursor;
  };
  more.addEventListener('click', load);
  clear(container, status, h('div', { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: '0' },
    h('table', {}, h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col', text: c })))), tbody)), h('div', { class: 'actions' }, more));
  return load();
}

async function invites(body, { signal }) {
  const wss = await workspaces(signal).catch(() => []);
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'off', required: true });
  const orgRole = select(ROLES, 'User', { name: 'org_role' });
  const err = formError();
  const form = h('form', { class: 'form', novalidate: true }, err,
    field('Email', email, { loc: 'email' }),
    field('Organization role', orgRole, { loc: 'org_role' }),
    group('Workspace roles', roleRows(wss, 'inv'), { loc: 'workspaces', hint: 'Optional: the roles the user gets in each workspace.' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Send invite' })));
  const statusSel = select([['pending', 'Pending'], ['claimed', 'Claimed'], ['revoked', 'Revoked'], ['all', 'All']], 'pending', { name: 'status' });
  const listEl = h('div', {});
  const names = new Map(wss.map((w) => [w.id, w.display_name]));
  const reload = () => pager(listEl, (cursor) => get('/api/v1/orgs/current/invites', { query: { status: statusSel.value, limit: 50, cursor }, signal, workspace: '' }),
    (items) => items.map((inv) => h('tr', {},
      h('td', { text: inv.email }), h('td', { text: inv.org_role }),
      h('td', { text: (inv.workspaces || []).map((w) => `${names.get(w.workspace_id) || w.workspace_id}: ${w.role}`).join(', ') || '—' }),
      h('td', {}, badge(inv.status)), h('td', {}, time(inv.created_at)),
      h('td', {}, inv.status === 'pending' ? h('button', { type: 'button', text: 'Revoke', 'aria-label': `Revoke the invite of ${inv.email}`, onclick: () => revoke(inv) }) : null))),
    'Invites', ['Email', 'Organization role', 'Workspaces', 'Status', 'Created', 'Actions']);
  async function revoke(inv) {
    if (!await confirmDialog({ title: `Revoke the invite of ${inv.email}?`, message: 'The email can no longer join with this invite.', confirm: 'Revoke' })) return;
    try {
      await del(`/api/v1/orgs/current/invites/${encodeURIComponent(inv.id)}`, { workspace: '' });
      await reload();
    } catch (e) {
      listEl.prepend(errorBox(e));
    }
  }
  const done = h('div', { role: 'status' });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    await submitting(form, 'Sending…', async () => {
      try {
        const inv = await post('/api/v1/orgs/current/invites', { email: email.value.trim(), org_role: orgRole.value, workspaces: chosenRoles(form) }, { workspace: '' });
        clearErrors(form);
        form.reset();
        clear(done, h('p', { class: 'notice', text: `Invite for ${inv.email} created.` }));
        await reload();
      } catch (e2) {
        clear(done);
        showError(form, e2);
      }
    });
  });
  statusSel.addEventListener('change', reload);
  clear(body, h('h2', { text: 'Invite a user' }), form, done,
    h('h2', { text: 'Invites' }), h('div', { class: 'toolbar' }, field('Show', statusSel)), listEl);
  await reload();
}

async function members(body, { signal }) {
  const wss = await workspaces(signal).catch(() => []);
  const names = new Map(wss.map((w) => [w.id, w.display_name]));
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'off' });
  const name = h('input', { type: 'text', name: 'name', autocomplete: 'off' });
  const orgRole = select(ROLES, 'User', { name: 'org_role' });
  const err = formError();
  const form = h('form', { class: 'form', novalidate: true }, err,
    field('Email', email, { loc: 'email' }), field('Name', name, { loc: 'name' }),
    field('Organization role', orgRole, { loc: 'org_role' }),
    group('Workspace roles', roleRows(wss, 'mem'), { loc: 'workspaces' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Add member' })));
  const listEl = h('div', {});
  const done = h('div', { role: 'status' });
  const reload = () => pager(listEl, (cursor) => get('/api/v1/orgs/current/members', { query: { limit: 50, cursor }, signal, workspace: '' }),
    (items) => items.map((m) => memberRow(m)), 'Members', ['Email', 'Name', 'Organization role', 'Workspaces', 'Source', 'Active', 'Actions']);
  function memberRow(m) {
    const roleSel = select(ROLES, m.org_role, { 'aria-label': `Organization role of ${m.email}` });
    const save = h('button', { type: 'button', text: 'Save role', 'aria-label': `Save role of ${m.email}` });
    const msg = h('div', { role: 'status' });
    save.addEventListener('click', async () => {
      save.disabled = true;
      try {
        const out = await patch(`/api/v1/orgs/current/members/${encodeURIComponent(m.id)}`, { org_role: roleSel.value }, { workspace: '' });
        clear(msg, h('span', { class: 'note', text: `Saved: ${out.org_role}` }));
      } catch (e) {
        clear(msg, errorBox(e));
      } finally {
        save.disabled = false;
      }
    });
    const remove = async () => {
      if (!await confirmDialog({ title: `Remove ${m.email}?`, message: 'The member loses all access to the organization.', confirm: 'Remove' })) return;
      try {
        await del(`/api/v1/orgs/current/members/${encodeURIComponent(m.id)}`, { workspace: '' });
        await reload();
      } catch (e) {
        clear(msg, errorBox(e));
      }
    };
    return h('tr', {},
      h('td', { text: m.email }), h('td', { text: m.name || '—' }),
      h('td', {}, h('div', { class: 'row' }, roleSel, save), msg),
      h('td', { text: (m.workspaces || []).map((w) => `${names.get(w.workspace_id) || w.workspace_id}: ${w.role}`).join(', ') || '—' }),
      h('td', { text: m.source + (m.scim_managed ? ' (SCIM)' : '') }),
      h('td', {}, badge(m.active ? 'true' : 'false')),
      h('td', {}, m.scim_managed ? h('span', { class: 'note', text: 'Managed by the identity provider' })
        : h('button', { type: 'button', text: 'Remove', 'aria-label': `Remove ${m.email}`, onclick: remove })));
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    await submitting(form, 'Adding…', async () => {
      try {
        const m = await post('/api/v1/orgs/current/members', { email: email.value.trim(), name: name.value.trim(), org_role: orgRole.value, workspaces: chosenRoles(form) }, { workspace: '' });
        clearErrors(form);
        form.reset();
        clear(done, h('p', { class: 'notice', text: `${m.email} added.` }));
        await reload();
      } catch (e2) {
        clear(done);
        showError(form, e2);
      }
    });
  });
  clear(body, h('h2', { text: 'Add a member' }), form, done, h('h2', { text: 'Members' }), listEl);
  await reload();
}

async function scimTokens(body, { signal }) {
  const desc = h('input', { type: 'text', name: 'description', autocomplete: 'off' });
  const err = formError();
  const form = h('form', { class: 'form', novalidate: true }, err, field('Description', desc, { loc: 'description', hint: 'For example the identity provider it is for: Okta.' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Create SCIM token' })));
  const shown = h('div', {});
  const listEl = h('div', {});
  const reload = async () => {
    const tokens = await loading(listEl, 'SCIM tokens', () => get('/api/v1/orgs/current/scim-tokens', { signal, workspace: '' }));
    if (!tokens) return;
    clear(listEl, tokens.length ? tableOf('SCIM tokens', ['Description', 'Token', 'Created', 'Actions'], tokens.map((t) => h('tr', {},
      h('td', { text: t.description || '—' }), h('td', { class: 'id', text: t.short_token }), h('td', {}, time(t.created_at)),
      h('td', {}, h('button', { type: 'button', text: 'Revoke', 'aria-label': `Revoke SCIM token ${t.description || t.short_token}`, onclick: () => revoke(t) })))))
      : h('p', { text: 'No SCIM tokens.' }));
  };
  async function revoke(t) {
    if (!await confirmDialog({ title: 'Revoke this SCIM token?', message: `Token ${t.short_token} stops working at once; the identity provider using it can no longer provision.`, confirm: 'Revoke' })) return;
    try {
      await del(`/api/v1/orgs/current/scim-tokens/${encodeURIComponent(t.id)}`, { workspace: '' });
      await reload();
    } catch (e) {
      listEl.prepend(errorBox(e));
    }
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    await submitting(form, 'Creating…', async () => {
      try {
        const t = await post('/api/v1/orgs/current/scim-tokens', { description: desc.value.trim() }, { workspace: '' });
        clearErrors(form);
        form.reset();
        const out = h('input', { type: 'text', readOnly: true, class: 'secret', value: t.token, id: 'new-scim-token' });
        const copyBtn = h('button', { type: 'button', text: 'Copy token' });
        copyBtn.addEventListener('click', async () => {
          out.select();
          try {
            await navigator.clipboard.writeText(t.token);
            copyBtn.textContent = 'Copied';
          } catch {
            copyBtn.textContent = 'Selected: press Ctrl+C';
          }
        });
        clear(shown, h('div', { class: 'panel', role: 'status' },
          h('p', { class: 'warn', text: 'Copy this token now: it is shown only once and cannot be read again.' }),
          field('New SCIM token', out), copyBtn,
          h('p', { class: 'hint', text: `Identity provider settings: base URL ${apiURL('/scim/v2')}, authentication "HTTP header / bearer token".` })));
        out.focus();
        out.select();
        await reload();
      } catch (e2) {
        showError(form, e2);
      }
    });
  });
  clear(body, h('h2', { text: 'Create a token' }), form, shown, h('h2', { text: 'Tokens' }), listEl);
  await reload();
}

const ACTIONS = ['sso.sign_in', 'organization.settings.updated', 'sso_defaults.updated', 'invite.created', 'invite.revoked', 'member.created', 'member.updated',
  'member.removed', 'group.created', 'group.updated', 'group.removed', 'scim_token.created', 'scim_token.revoked'];

async function audit(body, { signal }) {
  const action = select([['', 'All actions'], ...ACTIONS.map((a) => [a, a])], '', { name: 'action' });
  const listEl = h('div', {});
  const reload = () => pager(listEl, (cursor) => get('/api/v1/orgs/current/audit', { query: { limit: 50, cursor, action: action.value }, signal, workspace: '' }),
    (items) => items.map((a) => h('tr', {},
      h('td', {}, time(a.created_at)), h('td', { class: 'mono', text: a.action }),
      h('td', { text: a.actor ? `${a.actor.type} ${a.actor.id || ''}`.trim() : '—' }),
      h('td', { text: a.target ? [a.target.type, a.target.email || a.target.id].filter(Boolean).join(' ') : '—' }),
      h('td', { text: [a.decision, a.reason].filter(Boolean).join(': ') || '—' }),
      h('td', {}, a.details && Object.keys(a.details).length ? h('details', {}, h('summary', { text: 'Details' }), h('pre', { tabindex: '0', text: json(a.details) })) : '—'))),
    'Audit records', ['Time', 'Action', 'Actor', 'Target', 'Decision', 'Details']);
  action.addEventListener('change', reload);
  clear(body, h('div', { class: 'toolbar' }, field('Action', action)), listEl);
  await reload();
}
