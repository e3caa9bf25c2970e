// DOM helpers. Text from the API is only ever set as text (never HTML), so
// no answer can inject markup or script.

import { describe, locText } from './api.js';

let ids = 0;
export const uid = (p = 'f') => `${p}-${++ids}`;

// h builds an element: h('a', {href, class, onclick, 'aria-label'}, ...children).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'disabled' || k === 'selected' || k === 'required' || k === 'hidden' || k === 'readOnly' || k === 'multiple') el[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

// field wraps a control with its label, a hint and an error slot; loc is
// the body path (without "body") whose 422 messages belong here.
export function field(label, control, { hint, loc, inline } = {}) {
  if (!control.id) control.id = uid();
  const err = h('p', { class: 'field-error', id: control.id + '-err', hidden: true });
  const hintEl = hint ? h('p', { class: 'hint', id: control.id + '-hint', text: hint }) : null;
  control.setAttribute('aria-describedby', [hintEl && hintEl.id, err.id].filter(Boolean).join(' '));
  const lab = h('label', { for: control.id, text: label });
  const wrap = inline
    ? h('div', { class: 'field inline' }, control, lab, hintEl, err)
    : h('div', { class: 'field' }, lab, control, hintEl, err);
  if (loc !== undefined) wrap.dataset.loc = loc;
  wrap._control = control;
  wrap._error = err;
  return wrap;
}

// group is a fieldset with a legend and its own error slot.
export function group(legend, children, { loc, hint } = {}) {
  const id = uid('g');
  const err = h('p', { class: 'field-error', id: id + '-err', hidden: true });
  const fs = h('fieldset', { 'aria-describedby': err.id }, h('legend', { text: legend }), hint ? h('p', { class: 'hint', text: hint }) : null, children, err);
  if (loc !== undefined) fs.dataset.loc = loc;
  fs._control = fs;
  fs._error = err;
  return fs;
}

export function select(options, value, attrs = {}) {
  return h('select', attrs, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value: v, selected: v === value, text: label });
  }));
}

// clearErrors empties every error slot of a form.
export function clearErrors(form) {
  for (const el of form.querySelectorAll('[data-loc], fieldset')) {
    if (el._error) { el._error.hidden = true; el._error.textContent = ''; }
    if (el._control) el._control.removeAttribute('aria-invalid');
  }
  const summary = form.querySelector('.form-error');
  if (summary) summary.textContent = '';
}

export function setFieldError(wrap, msg) {
  wrap._error.textContent = msg;
  wrap._error.hidden = false;
  wrap._control.setAttribute('aria-invalid', 'true');
}

// showError puts err on the form: each 422 problem next to the field whose
// loc is the longest prefix of the problem's loc, the rest (and any other
// error) in the form's summary. The first invalid field gets the focus.
export function showError(form, err) {
  clearErrors(form);
  const summary = form.querySelector('.form-error');
  const fields = [...form.querySelectorAll('[data-loc]')].filter((f) => f.dataset.loc !== '');
  const rest = [];
  let first = null;
  if (err && err.problems) {
    for (const p of err.problems) {
      const path = locText(p.loc);
      let best = null;
      for (const f of fields) {
        const l = f.dataset.loc;
        if ((path === l || path.startsWith(l + '.')) && (!best || l.length > best.dataset.loc.length)) best = f;
      }
      if (best) {
        const prev = best._error.hidden ? '' : best._error.textContent + '\n';
        const where = path === best.dataset.loc ? '' : `${path.slice(best.dataset.loc.length + 1)}: `;
        setFieldError(best, prev + where + p.msg);
        first = first || best;
      } else rest.push(`${path}: ${p.msg}`);
    }
    if (summary) summary.textContent = rest.length ? 'The request was not valid (422):\n' + rest.join('\n') : 'The request was not valid (422): see the fields marked below.';
  } else if (summary) {
    summary.textContent = describe(err);
  }
  if (first) first._control.focus();
  else if (summary) summary.focus();
}

export function formError() {
  return h('div', { class: 'error form-error', role: 'alert', tabindex: '-1' });
}

// submitting disables a form's submit button and labels it while work runs.
export async function submitting(form, label, work) {
  const btn = form.querySelector('button[type="submit"]');
  const was = btn && btn.textContent;
  if (btn) { btn.disabled = true; btn.textContent = label; }
  form.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    form.removeAttribute('aria-busy');
    if (btn) { btn.disabled = false; btn.textContent = was; }
  }
}

// confirmDialog asks before a destructive action; resolves to the values of
// the dialog's extra controls (an object) or null when cancelled.
export function confirmDialog({ title, message, confirm = 'Confirm', danger = true, extra = [] }) {
  return new Promise((resolve) => {
    const titleId = uid('dlg');
    const ok = h('button', { type: 'submit', class: danger ? 'danger' : 'primary', value: 'ok', text: confirm });
    const cancel = h('button', { type: 'button', text: 'Cancel' });
    const form = h('form', { method: 'dialog' },
      h('h2', { id: titleId, text: title }),
      h('p', { text: message }),
      extra,
      h('div', { class: 'actions' }, ok, cancel));
    const dlg = h('dialog', { 'aria-labelledby': titleId }, form);
    let answer = null;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      answer = {};
      for (const el of form.querySelectorAll('input[name]')) answer[el.name] = el.type === 'checkbox' ? el.checked : el.value;
      dlg.close();
    });
    cancel.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => { dlg.remove(); resolve(answer); });
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

// loading shows a placeholder in el while work runs, then its result or a
// clear error message.
export async function loading(el, what, work) {
  clear(el, h('p', { class: 'loading', role: 'status', text: `Loading ${what}…` }));
  el.setAttribute('aria-busy', 'true');
  try {
    const out = await work();
    return out;
  } catch (err) {
    if (err && err.name === 'AbortError') return undefined;
    clear(el, errorBox(err));
    return undefined;
  } finally {
    el.removeAttribute('aria-busy');
  }
}

export function errorBox(err) {
  return h('div', { class: 'error', role: 'alert', text: describe(err) });
}

export function fmtTime(t) {
  if (!t) return '—';
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function time(t) {
  return h('time', { datetime: t || '', text: fmtTime(t) });
}

const BADGE = {
  DEPLOYED: 'ok', READY: 'ok', idle: 'ok', claimed: 'ok', true: 'ok',
  QUEUED: 'run', CREATING: 'run', AWAITING_BUILD: 'run', BUILDING: 'run', AWAITING_DEPLOY: 'run', DEPLOYING: 'run', AWAITING_DATABASE: 'run', busy: 'run', pending: 'run',
  CREATE_FAILED: 'bad', BUILD_FAILED: 'bad', DEPLOY_FAILED: 'bad', error: 'bad', AWAITING_DELETE: 'bad', revoked: 'bad', false: 'bad',
  SKIPPED: 'warn', INTERRUPTED: 'warn', interrupted: 'warn', UNUSED: 'warn',
};
export function badge(value) {
  return h('span', { class: `badge ${BADGE[value] || ''}`, text: String(value ?? '—') });
}

export function json(v) {
  return JSON.stringify(v, null, 2);
}

// tableOf builds a scrollable, labelled table.
export function tableOf(label, head, rows) {
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: '0' },
    h('table', {}, h('thead', {}, h('tr', {}, head.map((c) => (c instanceof Node ? c : h('th', { scope: 'col', text: c }))))),
      h('tbody', {}, rows)));
}

export function short(id) {
  return id ? String(id).slice(0, 8) : '—';
}

// parseJSONField reads a textarea as JSON ('' gives undefined) or marks it.
export function parseJSONField(wrap) {
  const text = wrap._control.value.trim();
  if (!text) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    setFieldError(wrap, `Not valid JSON: ${e.message}`);
    return { ok: false };
  }
}
