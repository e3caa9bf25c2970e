// The API client: where the API is (ui/config.json), the session (API key
// and workspace, in sessionStorage only), and one fetch wrapper that counts
// requests in flight and turns error answers into ApiError.

const SESSION_KEY = 'agentplane.session';
let apiBase = '';

// loadConfig reads ui/config.json next to this module. An empty
// api_base_url means the origin that served the page; a static host (S3 and
// CloudFront) writes the API's URL there.
export async function loadConfig() {
  try {
    const res = await fetch(new URL('config.json', import.meta.url), { cache: 'no-cache' });
    if (res.ok) {
      const cfg = await res.json();
      apiBase = String(cfg.api_base_url || '').replace(/\/+$/, '');
    }
  } catch {
    apiBase = '';
  }
  return apiBase;
}

export function apiURL(path) {
  return (apiBase || location.origin) + path;
}

// The session lives in this tab only: closing it forgets the key.
export const session = {
  get() {
    try {
      const s = JSON.parse(sessionStorage.getItem(SESSION_KEY) || 'null');
      return s && typeof s.key === 'string' ? s : null;
    } catch {
      return null;
    }
  },
  set(s) { sessionStorage.setItem(SESSION_KEY, JSON.stringify(s)); },
  clear() { sessionStorage.removeItem(SESSION_KEY); },
};

// Role order, as the API checks it.
const ROLES = ['Viewer', 'User', 'Editor', 'Admin'];
export function atLeast(role, least) { return ROLES.indexOf(role) >= ROLES.indexOf(least); }
export function workspaceRole() {
  const s = session.get();
  const ws = s && s.workspaces.find((w) => w.id === s.workspace);
  return ws ? ws.role : 'Viewer';
}

export class ApiError extends Error {
  constructor(status, detail, problems, retryAfter) {
    super(typeof detail === 'string' ? detail : 'Request failed');
    this.status = status;
    this.detail = detail;
    this.problems = problems; // 422: [{loc, msg, type}]
    this.retryAfter = retryAfter;
  }
}

let inFlight = 0;
const busyListeners = new Set();
export function onBusy(f) { busyListeners.add(f); }
function busy(delta) {
  inFlight += delta;
  for (const f of busyListeners) f(inFlight);
}

let unauthorized = () => {};
export function onUnauthorized(f) { unauthorized = f; }

// call sends one request. opts: body (JSON), query (object), signal,
// key (overrides the session's), workspace (false: no X-Tenant-Id),
// redirect401 (false: a 401 is only thrown, as on the sign-in form).
export async function call(method, path, opts = {}) {
  const s = session.get();
  const key = opts.key ?? (s && s.key);
  const headers = { Accept: 'application/json' };
  if (key) headers['X-Api-Key'] = key;
  const ws = opts.workspace ?? (s && s.workspace);
  if (ws) headers['X-Tenant-Id'] = ws;
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let url = apiURL(path);
  if (opts.query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query)) {
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    const qs = q.toString();
    if (qs) url += '?' + qs;
  }
  busy(1);
  let res;
  try {
    res = await fetch(url, { method, headers, body, signal: opts.signal, credentials: 'omit', cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, `Could not reach the API at ${apiBase || location.origin}: ${e.message}`);
  } finally {
    busy(-1);
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (res.ok) return { status: res.status, data, headers: res.headers };
  const detail = data && typeof data === 'object' ? data.detail : data;
  const problems = res.status === 422 && Array.isArray(detail) ? detail : null;
  const err = new ApiError(res.status, problems ? 'The request was not valid' : (detail || res.statusText), problems, res.headers.get('Retry-After'));
  if (res.status === 401 && opts.redirect401 !== false) {
    session.clear();
    unauthorized(err);
  }
  throw err;
}

export const get = (path, opts) => call('GET', path, opts).then((r) => r.data);
export const post = (path, body, opts = {}) => call('POST', path, { ...opts, body }).then((r) => r.data);
export const patch = (path, body, opts = {}) => call('PATCH', path, { ...opts, body }).then((r) => r.data);
export const del = (path, opts) => call('DELETE', path, opts).then((r) => r.data);

// describe turns an error into one sentence for the person using the UI.
export function describe(err) {
  if (!(err instanceof ApiError)) return `Unexpected error: ${err && err.message ? err.message : err}`;
  const d = typeof err.detail === 'string' ? err.detail : '';
  switch (true) {
    case err.status === 0: return err.message;
    case err.status === 401: return `The API key was not accepted (401)${d ? ': ' + d : ''}. Sign in again.`;
    case err.status === 403: return `Not allowed (403): ${d || 'your role does not permit this.'}`;
    case err.status === 404: return `Not found (404): ${d || 'it may have been deleted.'}`;
    case err.status === 409: return `Conflict (409): ${d}`;
    case err.status === 422: return 'The request was not valid (422):\n' + (err.problems || []).map((p) => `${locText(p.loc)}: ${p.msg}`).join('\n');
    case err.status === 429: return `Too many requests (429): try again${err.retryAfter ? ` in ${err.retryAfter} s` : ' later'}.`;
    case err.status === 503: return `Unavailable (503): ${d}`;
    case err.status >= 500: return `The server failed (${err.status})${d ? ': ' + d : ''}. Try again.`;
    default: return `${d || 'Request failed'} (${err.status})`;
  }
}

export function locText(loc) {
  return (loc || []).filter((p, i) => !(i === 0 && p === 'body')).join('.') || 'body';
}
