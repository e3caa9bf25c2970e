// Deployments: the list, the create form and a deployment's page with its
// revisions, each revision's build workflow graph and build log.

import { get, post, del, atLeast, workspaceRole, describe } from './api.js';
import { h, clear, field, group, select, formError, showError, submitting, confirmDialog, loading, errorBox, time, badge, tableOf, short } from './dom.js';
import { mountGraph } from './graph.js';
import { stepStates, IN_PROGRESS } from './progress.js';

const PAGE = 20;
const POLL_MS = 1000;
const enc = encodeURIComponent;

export async function list({ main, query, signal, setTitle }) {
  const offset = Math.max(0, parseInt(query.get('offset') || '0', 10) || 0);
  const name = query.get('name') || '';
  const canEdit = atLeast(workspaceRole(), 'Editor');
  const search = h('input', { type: 'search', name: 'name', value: name });
  const filter = h('form', { class: 'toolbar', role: 'search', 'aria-label': 'Filter deployments' },
    field('Name contains', search), h('button', { type: 'submit', text: 'Filter' }));
  filter.addEventListener('submit', (e) => {
    e.preventDefault();
    location.hash = `#/deployments?name=${enc(search.value.trim())}`;
  });
  const body = h('div', {});
  clear(main, h('h1', { text: 'Deployments' }),
    canEdit ? h('div', { class: 'actions' }, h('a', { class: 'button primary', href: '#/deployments/new', text: 'Create deployment' })) : null,
    filter, body);
  setTitle('Deployments');
  const page = await loading(body, 'deployments', () => get('/v2/deployments', { query: { limit: PAGE, offset, name_contains: name }, signal }));
  if (!page) return;
  const rows = page.resources.map((d) => h('tr', {},
    h('td', {}, h('a', { href: `#/deployments/${d.id}`, text: d.name })),
    h('td', {}, badge(d.status)),
    h('td', { text: d.source }),
    h('td', {}, time(d.updated_at)),
    h('td', {}, h('a', { href: `#/deployments/${d.id}/threads`, text: 'Threads', 'aria-label': `Threads of ${d.name}` }))));
  const q = (o) => `#/deployments?name=${enc(name)}&offset=${o}`;
  clear(body,
    page.resources.length ? tableOf('Deployments', ['Name', 'Status', 'Source', 'Updated', 'Threads'], rows)
      : h('p', { text: name ? 'No deployment matches this filter.' : 'No deployments yet.' }),
    h('nav', { class: 'pager', 'aria-label': 'Pages of deployments' },
      offset > 0 ? h('a', { href: q(Math.max(0, offset - PAGE)), text: 'Previous page' }) : null,
      h('span', { text: page.resources.length ? `Deployments ${offset + 1}–${offset + page.resources.length}` : '' }),
      page.resources.length === PAGE ? h('a', { href: q(page.offset), text: 'Next page' }) : null));
}

export async function create({ main, signal, go, notify, setTitle }) {
  clear(main, h('p', { class: 'crumbs' }, h('a', { href: '#/deployments', text: 'Deployments' })), h('h1', { text: 'Create deployment' }));
  setTitle('Create deployment');
  if (!atLeast(workspaceRole(), 'Editor')) {
    main.append(h('p', { class: 'warn', text: 'Creating deployments needs the Editor role in this workspace.' }));
    return;
  }
  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 128, autocomplete: 'off' });
  const srcRepo = h('input', { type: 'radio', name: 'source', value: 'repo_host', checked: true, id: 'src-repo' });
  const srcImage = h('input', { type: 'radio', name: 'source', value: 'external_container', id: 'src-image' });
  const source = group('Source', [
    h('div', { class: 'field inline' }, srcRepo, h('label', { for: 'src-repo', text: 'Repository (repo_host): build from a git repository' })),
    h('div', { class: 'field inline' }, srcImage, h('label', { for: 'src-image', text: 'Container image (external_container): run an image on a listener' })),
  ], { loc: 'source' });
  const repoURL = h('input', { type: 'text', name: 'repo_url', autocomplete: 'off', spellcheck: 'false' });
  const repoRef = h('input', { type: 'text', name: 'repo_ref', autocomplete: 'off', spellcheck: 'false' });
  const configPath = h('input', { type: 'text', name: 'graph_config_path', value: 'langgraph.json', spellcheck: 'false' });
  const depType = select(['dev', 'dev_free', 'prod'], 'dev', { name: 'deployment_type' });
  const onPush = h('input', { type: 'checkbox', name: 'build_on_push' });
  const repoSection = group('Repository', [
    field('Repository URL', repoURL, { loc: 'source_config.repo_url', hint: 'https URL; on the local server also a path or file:// URL on this machine.' }),
    field('Branch or tag', repoRef, { loc: 'source_revision_config.repo_ref', hint: 'Empty: the default branch. A tag is refs/tags/NAME.' }),
    field('Graph configuration file', configPath, { loc: 'source_revision_config.graph_config_path' }),
    field('Deployment type', depType, { loc: 'source_config.deployment_type' }),
    field('Build on push', onPush, { loc: 'source_config.build_on_push', inline: true }),
  ]);
  const image = h('input', { type: 'text', name: 'image_uri', autocomplete: 'off', spellcheck: 'false' });
  const listener = select([['', 'Loading listeners…']], '', { name: 'listener_id' });
  const namespace = h('input', { type: 'text', name: 'k8s_namespace', autocomplete: 'off' });
  const imageSection = group('Container image', [
    field('Image', image, { loc: 'source_revision_config.image_uri', hint: 'An OCI reference, e.g. ghcr.io/acme/agent:1.0' }),
    field('Listener', listener, { loc: 'source_config.listener_id' }),
    field('Kubernetes namespace', namespace, { loc: 'source_config.listener_config' }),
  ]);
  imageSection.hidden = true;
  const secretRows = h('div', {});
  const secrets = group('Secrets', [secretRows, h('button', { type: 'button', text: 'Add secret', onclick: () => addSecret() })],
    { loc: 'secrets', hint: 'Environment variables of the agent server; values are stored encrypted and never shown again.' });
  let n = 0;
  function addSecret() {
    n++;
    const k = h('input', { type: 'text', 'data-secret': 'name', autocomplete: 'off', spellcheck: 'false' });
    const v = h('input', { type: 'password', 'data-secret': 'value', autocomplete: 'new-password' });
    const row = h('div', { class: 'row' },
      h('label', { for: k.id = `secret-name-${n}`, text: `Name ${n}` }), k,
      h('label', { for: v.id = `secret-value-${n}`, text: `Value ${n}` }), v,
      h('button', { type: 'button', text: 'Remove', 'aria-label': `Remove secret ${n}`, onclick: () => row.remove() }));
    secretRows.append(row);
    k.focus();
  }
  const err = formError();
  const form = h('form', { class: 'form', novalidate: true }, err,
    field('Name', name, { loc: 'name', hint: '1 to 128 characters, unique in the workspace.' }),
    source, repoSection, imageSection, secrets,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', text: 'Create deployment' }), h('a', { class: 'button', href: '#/deployments', text: 'Cancel' })));
  main.append(form);
  const toggle = () => {
    repoSection.hidden = !srcRepo.checked;
    imageSection.hidden = !srcImage.checked;
  };
  srcRepo.addEventListener('change', toggle);
  srcImage.addEventListener('change', toggle);
  get('/v2/listeners', { query: { limit: 100 }, signal }).then((page) => {
    clear(listener, h('option', { value: '', text: page.resources.length ? 'Choose a listener' : 'No listener registered' }),
      page.resources.map((l) => h('option', { value: l.id, text: `${l.compute_id} (${l.compute_type})` })));
  }, (e) => {
    if (e.name !== 'AbortError') clear(listener, h('option', { value: '', text: `Listeners unavailable: ${describe(e)}` }));
  });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const secretList = [...secretRows.querySelectorAll('.row')].map((row) => ({
      name: row.querySelector('[data-secret="name"]').value.trim(),
      value: row.querySelector('[data-secret="value"]').value,
    }));
    const body = { name: name.value.trim(), secrets: secretList };
    if (srcRepo.checked) {
      body.source = 'repo_host';
      body.source_config = { repo_url: repoURL.value.trim(), deployment_type: depType.value, build_on_push: onPush.checked };
      body.source_revision_config = { repo_ref: repoRef.value.trim() || null, graph_config_path: configPath.value.trim() || null };
    } else {
      body.source = 'external_container';
      body.source_config = {};
      if (listener.value) body.source_config.listener_id = listener.value;
      if (namespace.value.trim()) body.source_config.listener_config = { k8s_namespace: namespace.value.trim() };
      body.source_revision_config = { image_uri: image.value.trim() };
    }
    await submitting(form, 'Creating…', async () => {
      try {
        const d = await post('/v2/deployments', body);
        notify(`Deployment ${d.name} created: its first revision is building.`);
        go(`#/deployments/${d.id}`);
      } catch (e2) {
        showError(form, e2);
        if (e2.problems) {
          // A problem in one secret row: mark that row's inputs too.
          for (const p of e2.problems) {
            if (p.loc[1] === 'secrets' && typeof p.loc[2] === 'number') {
              const row = secretRows.querySelectorAll('.row')[p.loc[2]];
              if (row) row.querySelectorAll('input').forEach((i) => i.setAttribute('aria-invalid', 'true'));
            }
          }
        }
      }
    });
  });
  name.focus();
}

// detail is a deployment's page: its facts, actions, revisions and the
// selected revision's build (graph and log), polled while it builds.
export async function detail({ main, params, signal, go, notify, setTitle }) {
  const [id, revParam] = params;
  const canEdit = atLeast(workspaceRole(), 'Editor');
  const head = h('div', {});
  const revs = h('section', {});
  const build = h('section', {});
  clear(main, h('p', { class: 'crumbs' }, h('a', { href: '#/deployments', text: 'Deployments' })), head, revs, build);
  let dep = await loading(head, 'the deployment', () => get(`/v2/deployments/${enc(id)}`, { signal }));
  if (!dep) {
    setTitle('Deployment');
    return;
  }
  const revId = revParam || dep.latest_revision_id;
  let graphDef = null;
  const graphP = fetch(new URL('workflows/build.json', import.meta.url), { signal }).then((r) => {
    if (!r.ok) throw new Error(`workflow graph: HTTP ${r.status}`);
    return r.json();
  });

  function renderHead() {
    const sc = dep.source_config || {};
    const src = dep.source_revision_config || {};
    const facts = [
      ['Status', badge(dep.status)],
      ['Source', dep.source],
      dep.source === 'repo_host' ? ['Repository', sc.repo_url] : ['Image', src.image_uri],
      dep.source === 'repo_host' ? ['Branch or tag', src.repo_ref || 'default branch'] : null,
      dep.source === 'repo_host' ? ['Graph configuration', src.graph_config_path] : null,
      ['URL', sc.custom_url || '—'],
      ['Active revision', dep.active_revision_id ? h('a', { href: `#/deployments/${id}/revisions/${dep.active_revision_id}`, text: short(dep.active_revision_id) }) : 'none yet'],
      ['Secrets', (dep.secrets || []).map((s) => s.name).join(', ') || 'none'],
      ['Created', time(dep.created_at)],
      ['Updated', time(dep.updated_at)],
      ['ID', h('span', { class: 'mono', text: dep.id })],
    ].filter(Boolean);
    clear(head, h('h1', { text: dep.name }),
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v ?? '—')])),
      h('div', { class: 'actions' },
        h('a', { class: 'button', href: `#/deployments/${id}/threads`, text: 'Threads' }),
        canEdit ? h('button', { type: 'button', class: 'danger', text: 'Delete deployment', onclick: remove }) : null));
  }

  async function remove() {
    const extra = [h('div', { class: 'field inline' }, h('input', { type: 'checkbox', name: 'delete_tracing_project', id: 'del-tracing' }),
      h('label', { for: 'del-tracing', text: 'Also delete its tracing project' }))];
    const ok = await confirmDialog({ title: `Delete ${dep.name}?`, message: 'Its thread API stops at once; its threads, build logs and revisions are removed. This cannot be undone.', confirm: 'Delete', extra });
    if (!ok) return;
    try {
      await del(`/v2/deployments/${enc(id)}`, { query: { delete_tracing_project: ok.delete_tracing_project ? 'true' : undefined } });
      notify(`Deployment ${dep.name} is being deleted.`);
      go('#/deployments');
    } catch (e) {
      head.append(errorBox(e));
    }
  }

  async function redeploy(r) {
    const ok = await confirmDialog({ title: `Redeploy revision ${short(r.id)}?`, message: 'A new revision is made with this revision\'s configuration and built; when it is deployed it serves the deployment.', confirm: 'Redeploy', danger: false });
    if (!ok) return;
    try {
      const d = await post(`/v2/deployments/${enc(id)}/revisions/${enc(r.id)}/redeploy`);
      notify(`Revision ${short(r.id)} redeployed as revision ${short(d.latest_revision_id)}.`);
      go(`#/deployments/${id}/revisions/${d.latest_revision_id}`);
    } catch (e) {
      revs.append(errorBox(e));
    }
  }

  let listedStatus = null; // the selected revision's status in the list on screen
  async function loadRevisions() {
    const page = await get(`/v2/deployments/${enc(id)}/revisions`, { query: { limit: 50 }, signal });
    const selected = page.resources.find((r) => r.id === revId);
    listedStatus = selected ? selected.status : null;
    const rows = page.resources.map((r) => h('tr', { 'aria-selected': r.id === revId ? 'true' : null },
      h('td', { class: 'id' }, h('a', { href: `#/deployments/${id}/revisions/${r.id}`, text: short(r.id), 'aria-label': `Revision ${r.id}`, 'aria-current': r.id === revId ? 'true' : null })),
      h('td', {}, badge(r.status), r.id === dep.active_revision_id ? [' ', h('span', { class: 'badge ok', text: 'active' })] : null),
      h('td', { text: r.trigger }),
      h('td', {}, time(r.created_at)),
      h('td', { class: 'id', text: r.source_revision_config && r.source_revision_config.repo_commit_sha ? r.source_revision_config.repo_commit_sha.slice(0, 10) : '—' }),
      canEdit ? h('td', {}, IN_PROGRESS.has(r.status) ? null : h('button', { type: 'button', text: 'Redeploy', 'aria-label': `Redeploy revision ${short(r.id)}`, onclick: () => redeploy(r) })) : null));
    clear(revs, h('h2', { id: 'revisions-h', text: 'Revisions' }),
      tableOf('Revisions', ['Revision', 'Status', 'Trigger', 'Created', 'Commit', ...(canEdit ? ['Actions'] : [])], rows));
  }

  renderHead();
  setTitle(dep.name);
  await loading(revs, 'revisions', loadRevisions);
  if (!revId) {
    clear(build, h('h2', { id: 'build-h', text: 'Build' }), h('p', { text: 'This deployment has no revision.' }));
    return;
  }

  const graphEl = h('div', { id: 'workflow-graph' });
  const statusEl = h('div', { 'aria-live': 'polite' });
  const logList = h('ol', { class: 'log', 'aria-label': 'Build log', tabindex: '0' });
  const logNote = h('p', { class: 'note' });
  clear(build, h('h2', { id: 'build-h', text: `Build of revision ${short(revId)}` }), statusEl,
    h('div', { class: 'columns' },
      h('div', {}, h('h3', { text: 'Workflow' }), graphEl),
      h('div', {}, h('h3', { text: 'Build log' }), logNote, logList)));
  clear(graphEl, h('p', { class: 'loading', text: 'Loading the workflow…' }));
  const logs = [];
  let logOffset = 0;
  let prevStatus;

  async function poll() {
    const [rev, page] = await Promise.all([
      get(`/v2/deployments/${enc(id)}/revisions/${enc(revId)}`, { signal }),
      get(`/v2/deployments/${enc(id)}/revisions/${enc(revId)}/logs`, { query: { limit: 1000, offset: logOffset }, signal }),
    ]);
    if (!graphDef) graphDef = await graphP;
    for (const l of page.resources) {
      logs.push(l);
      logList.append(h('li', {}, h('span', { class: 't', text: fmtClock(l.timestamp) }), ' ', h('span', { class: 's', text: `[${l.step}]` }), ' ', l.message));
    }
    logOffset = page.offset;
    logNote.textContent = logs.length ? `${logs.length} lines${IN_PROGRESS.has(rev.status) ? ', updating while the revision builds' : ''}.` : 'No log lines yet.';
    if (page.resources.length) logList.scrollTop = logList.scrollHeight;
    mountGraph(graphEl, graphDef, stepStates(graphDef, rev.status, logs));
    graphEl.dataset.revisionStatus = rev.status;
    clear(statusEl, h('dl', { class: 'facts' },
      h('dt', { text: 'Status' }), h('dd', { id: 'revision-status' }, badge(rev.status)),
      rev.status_message ? [h('dt', { text: 'Message' }), h('dd', { text: rev.status_message })] : null,
      rev.graphs ? [h('dt', { text: 'Graphs' }), h('dd', { text: rev.graphs.join(', ') })] : null,
      h('dt', { text: 'Trigger' }), h('dd', { text: rev.trigger + (rev.redeployed_from ? ` of ${short(rev.redeployed_from)}` : '') })));
    // The revision moved on since the page read it, or the deployment was
    // read before the revision's last change: refresh both.
    const moved = prevStatus === undefined
      ? rev.status !== listedStatus || (!IN_PROGRESS.has(rev.status) && new Date(rev.updated_at) > new Date(dep.updated_at))
      : rev.status !== prevStatus;
    prevStatus = rev.status;
    if (moved) {
      // The revision moved on: the deployment and the list change too.
      dep = await get(`/v2/deployments/${enc(id)}`, { signal });
      renderHead();
      await loadRevisions();
    }
    return rev;
  }

  const loop = async () => {
    while (!signal.aborted) {
      let rev;
      try {
        rev = await poll();
      } catch (e) {
        if (e.name === 'AbortError') return;
        clear(statusEl, h('div', { class: 'error', role: 'alert', text: `${describe(e)} Retrying…` }));
      }
      if (rev && !IN_PROGRESS.has(rev.status)) return;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  loop();
}

function fmtClock(t) {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString(undefined, { hour12: false });
}
