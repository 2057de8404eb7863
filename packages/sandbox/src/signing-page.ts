import type { IframeStyle } from '../../../src/esign/schemas.js';
import { PAGE_REASONS, pageMessage } from './page-messages.js';
import type { SigningRefusal, SigningView } from './signing.js';

const REFUSALS: Record<SigningRefusal, { title: string; detail: string }> = {
  link_invalid: { title: 'This signing link is not valid', detail: 'Ask for a new signing link.' },
  link_expired: { title: 'This signing link has expired', detail: 'Signing links are short-lived. Ask for a new one.' },
  link_used: { title: 'This signing link was already used', detail: 'Each signing link opens the page once. Ask for a new one.' },
  not_found: { title: 'This transaction no longer exists', detail: 'It may have been deleted.' },
  participant_mismatch: { title: 'You are not a participant of this transaction', detail: 'The link does not match the transaction.' },
  completed: { title: 'This transaction is already completed', detail: 'Everyone has signed. There is nothing left to do.' },
  declined: { title: 'This transaction was declined', detail: 'A participant declined to sign. It can no longer be signed.' },
  cancelled: { title: 'This transaction was cancelled', detail: 'It can no longer be signed.' },
  expired: { title: 'This transaction has expired', detail: 'It can no longer be signed.' },
  not_sent: { title: 'This transaction has not been sent for signing yet', detail: 'Try again once it has been sent.' },
};

/** What a page that can no longer act shows (its link or session expired, its transaction ended meanwhile). */
const STOPS: Record<string, { title: string; detail: string }> = {
  ...Object.fromEntries(Object.entries(REFUSALS).filter(([reason]) => PAGE_REASONS[reason as SigningRefusal].type !== 'esign:error')),
  session_expired: { title: 'This signing session has expired', detail: 'Ask for a new signing link.' },
};

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON that is safe inside a <script> element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function css(style: IframeStyle): string {
  // Only values that passed the colour check reach here (see appliedStyle in style.ts).
  return `:root{--primary:${style.primaryColor ?? '#1a56db'};--secondary:${style.secondaryColor ?? '#eef2ff'};--text:${
    style.textColor ?? '#111827'
  };--bg:${style.background ?? '#f9fafb'};--success:${style.successColor ?? '#047857'};--error:${style.errorColor ?? '#b91c1c'};--info:${
    style.infoColor ?? '#1d4ed8'
  };--font:${style.fontType ? escapeHtml(style.fontType).replace(/[;{}]/g, '') : 'system-ui, sans-serif'}}
body{margin:0;padding:16px;background:var(--bg);color:var(--text);font-family:var(--font)}
h1{font-size:20px;margin:0 0 12px} h2{font-size:16px;margin:16px 0 8px}
.msg{padding:10px 12px;border-radius:6px;margin:8px 0}
.info{background:var(--secondary);color:var(--info)} .success{background:var(--secondary);color:var(--success)} .error{background:var(--secondary);color:var(--error)}
.page{position:relative;background:#fff;border:1px solid #d1d5db;margin:8px 0;box-shadow:0 1px 2px #0001}
.page .label{position:absolute;top:4px;right:8px;font-size:11px;color:#6b7280;z-index:1}
.page canvas{position:absolute;left:0;top:0;width:100%;height:100%}
.tag{position:absolute;z-index:2;box-sizing:border-box;border:2px dashed var(--primary);background:#fff8;color:var(--primary);font-size:12px;cursor:pointer;padding:0 4px;overflow:hidden;white-space:nowrap}
.tag.applied{border-style:solid;background:var(--secondary);font-family:Georgia,serif;font-style:italic;cursor:default}
button.finish{background:var(--primary);color:#fff;border:0;border-radius:6px;padding:10px 16px;font-size:15px;cursor:pointer}
button.finish:disabled{opacity:.5;cursor:not-allowed}
button.decline{background:none;border:1px solid var(--error);color:var(--error);border-radius:6px;padding:9px 14px;font-size:14px;cursor:pointer;margin-left:8px}
form.decline{margin:12px 0;padding:12px;border:1px solid var(--error);border-radius:6px;background:#fff}
form.auth{margin:12px 0;padding:12px;border:1px solid var(--primary);border-radius:6px;background:#fff}
form.auth input{display:block;margin:8px 0;padding:6px;font:inherit;min-width:240px}
form.decline textarea{display:block;width:100%;box-sizing:border-box;min-height:60px;margin:6px 0;font:inherit}`;
}

/** The signing page: the refusal page for spec section 7's conditions, or the documents to sign. */
/**
 * The signing page, or its refusal. Messages go only to the framing page's
 * origin, and only when it is one of the configured integrator origins.
 */
export function renderSigningPage(
  view: (SigningView & { session: string }) | { refusal: SigningRefusal; style: IframeStyle },
  embedOrigins: readonly string[],
): string {
  const target = `const ORIGINS = ${scriptJson(embedOrigins)};
const ancestor = (location.ancestorOrigins && location.ancestorOrigins[0]) || null;
const TARGET = ORIGINS.includes(ancestor) ? ancestor : (ORIGINS.length === 1 && window.parent !== window ? ORIGINS[0] : null);`;
  if ('refusal' in view) {
    const r = REFUSALS[view.refusal];
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${escapeHtml(r.title)}</title><style>${css(view.style)}</style></head>
<body><main data-refusal="${view.refusal}"><h1>${escapeHtml(r.title)}</h1><p class="msg error" role="alert">${escapeHtml(r.detail)}</p></main>
<script>${target}
if (TARGET) parent.postMessage(${scriptJson({ source: 'esign-sandbox', ...pageMessage(view.refusal, `${r.title}. ${r.detail}`) })}, TARGET);</script></body></html>`;
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Sign: ${escapeHtml(view.title)}</title><style>${css(view.style)}</style></head>
<body><main id="app"><h1>${escapeHtml(view.title)}</h1><div id="status" class="msg info" role="status">Loading…</div><div id="docs"></div><div id="actions"></div></main>
<script type="module">
const VIEW = ${scriptJson(view)};
${target}
// The link in the address bar is used up; the page acts with its own session.
const base = '/sign/' + VIEW.session;
const post = (type, extra) => { if (TARGET) parent.postMessage(Object.assign({ source: 'esign-sandbox', type, esignId: VIEW.esignId }, extra), TARGET); };
const statusEl = document.getElementById('status');
function say(text, kind) { statusEl.textContent = text; statusEl.className = 'msg ' + kind; }
const state = { view: VIEW, declining: null, declined: false, stopped: null };
// Every failure becomes one message to the host, whose type says what to do (docs/integrator-events.md).
const REASONS = ${scriptJson(PAGE_REASONS)};
const STOPS = ${scriptJson(STOPS)};
function reasonOf(e) {
  if (typeof e.status !== 'number') return 'network';
  // The page's own session token is what expired: the link that opened it is long used.
  if (e.code === 'link_expired') return 'session_expired';
  if (e.code && REASONS[e.code]) return e.code;
  if (e.status === 423) return 'locked';
  return e.status >= 500 ? 'provider_error' : 'refused';
}
function failed(what, e, reason) {
  reason = reason || reasonOf(e);
  const m = REASONS[reason];
  post(m.type, { reason, action: m.action, message: e.message });
  if (m.type === 'esign:error') { say(what + ': ' + e.message, 'error'); return; }
  // Expired, or ended meanwhile: nothing on this page can succeed any more.
  state.stopped = reason;
  document.getElementById('docs').textContent = '';
  document.getElementById('actions').textContent = '';
  say(STOPS[reason].title + '. ' + STOPS[reason].detail, 'error');
  document.body.dataset.stopped = reason;
}
function mineToSign() { return state.view.participants.filter(p => p.yourTurn); }
// Pages are drawn once by pdf.js; re-renders only move the tag buttons.
const canvases = new Map();
async function drawPages() {
  try {
    const pdfjs = await import('/sign/assets/pdf.mjs');
    pdfjs.GlobalWorkerOptions.workerSrc = '/sign/assets/pdf.worker.mjs';
    for (const d of VIEW.documents) {
      const pdf = await pdfjs.getDocument({ url: base + '/documents/' + d.index, isEvalSupported: false }).promise;
      for (let i = 0; i < pdf.numPages; i++) {
        const page = await pdf.getPage(i + 1);
        const [w] = d.pageSizes[i] || [612];
        const viewport = page.getViewport({ scale: Math.min(1, 640 / w) * (window.devicePixelRatio || 1) });
        const canvas = document.createElement('canvas');
        canvas.width = viewport.width; canvas.height = viewport.height;
        await page.render({ canvasContext: canvas.getContext('2d'), viewport }).promise;
        canvases.set(d.index + ':' + i, canvas);
      }
    }
    render();
    document.body.dataset.pagesRendered = 'true';
  } catch (e) { if (!state.stopped) failed('Could not display the document', e, e && e.status === 401 ? 'session_expired' : 'document_unavailable'); }
}
function render() {
  if (state.declined || state.stopped) return;
  const v = state.view;
  const docs = document.getElementById('docs');
  docs.textContent = '';
  for (const d of v.documents) {
    const h = document.createElement('h2'); h.textContent = d.title; docs.appendChild(h);
    d.pageSizes.forEach(([w, hgt], pageIndex) => {
      const scale = Math.min(1, 640 / w);
      const page = document.createElement('div');
      page.className = 'page'; page.style.width = (w * scale) + 'px'; page.style.height = (hgt * scale) + 'px';
      page.dataset.page = String(pageIndex);
      const canvas = canvases.get(d.index + ':' + pageIndex);
      if (canvas) page.appendChild(canvas);
      const label = document.createElement('span'); label.className = 'label'; label.textContent = 'Page ' + (pageIndex + 1); page.appendChild(label);
      for (const t of d.tags.filter(t => t.page === pageIndex)) {
        const p = v.participants.find(x => x.id === t.participantId);
        const el = document.createElement('button');
        el.type = 'button';
        el.className = 'tag' + (t.applied ? ' applied' : '');
        el.dataset.tag = t.docIndex + ':' + t.tagIndex; el.dataset.type = t.type;
        el.style.left = (t.x * scale) + 'px'; el.style.top = ((hgt - t.y - t.height) * scale) + 'px';
        el.style.width = (t.width * scale) + 'px'; el.style.height = (t.height * scale) + 'px';
        el.textContent = t.applied || ((t.required ? '* ' : '') + (t.prefilled ?? t.type.replace(/TEMPLATE.*$/, '').toLowerCase()));
        if (t.prefilled !== null && !t.applied) el.dataset.prefilled = t.prefilled;
        el.title = t.applied ? 'Applied' : 'Click to apply: ' + t.suggested;
        el.disabled = !!t.applied || !p || !p.yourTurn;
        el.addEventListener('click', () => apply(t, el));
        page.appendChild(el);
      }
      docs.appendChild(page);
    });
  }
  const actions = document.getElementById('actions');
  // An open decline form is left as it is: rebuilding it under the signer's cursor (pdf.js finishing its
  // drawing re-renders the page) would drop what they are typing.
  const typing = state.declining && actions.querySelector('form.decline');
  if (!typing) actions.textContent = '';
  for (const p of typing ? [] : v.participants) {
    const btn = document.createElement('button');
    btn.className = 'finish'; btn.dataset.participant = p.id;
    const missing = v.documents.flatMap(d => d.tags).filter(t => t.participantId === p.id && t.required && !t.applied).length;
    btn.textContent = p.finished ? p.name + ' has signed' : 'Finish signing as ' + p.name;
    btn.disabled = p.finished || !p.yourTurn || missing > 0;
    btn.addEventListener('click', () => finish(p));
    actions.appendChild(btn);
    if (!p.finished) {
      const no = document.createElement('button');
      no.type = 'button'; no.className = 'decline'; no.dataset.declineFor = p.id;
      no.textContent = 'Decline to sign as ' + p.name;
      no.addEventListener('click', () => { state.declining = { participant: p, reason: '' }; render(); });
      actions.appendChild(no);
    }
  }
  if (state.declining && !typing) askReason(state.declining);
  const waiting = v.participants.find(p => !p.finished && !p.yourTurn && p.waitingFor);
  if (v.participants.every(p => p.finished)) say('Thank you. Your signature has been recorded.', 'success');
  else if (waiting && mineToSign().length === 0) say('It is not your turn yet: waiting for ' + waiting.waitingFor + ' to sign.', 'info');
  else say('Click each highlighted field to apply it, then finish signing.', 'info');
}
async function call(path, body) {
  const res = await fetch(base + path, body === undefined ? { cache: 'no-store' } : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) {
    let problem = {};
    try { problem = await res.json(); } catch {}
    throw Object.assign(new Error(problem.detail || res.statusText), { status: res.status, code: problem.code });
  }
  return res.status === 204 ? null : res.json();
}
// Signer authentication comes first: the documents arrive only once every step is passed.
function authenticate() {
  const a = state.view.authentication[0];
  const who = state.view.participants.find(p => p.id === a.participantId);
  document.getElementById('docs').textContent = '';
  const actions = document.getElementById('actions');
  actions.textContent = '';
  const form = document.createElement('form');
  form.className = 'auth'; form.dataset.step = a.step; form.dataset.participant = a.participantId;
  const label = document.createElement('label');
  label.textContent = a.prompt + ' ';
  const input = document.createElement('input');
  input.name = 'answer'; input.autocomplete = 'off'; input.required = true;
  input.type = a.step === 'personal-password' ? 'password' : 'text';
  if (a.step === 'two-factor-authentication') input.inputMode = 'numeric';
  label.appendChild(input);
  const submit = document.createElement('button');
  submit.type = 'submit'; submit.className = 'finish'; submit.textContent = 'Continue';
  form.append(label, submit);
  if (a.step === 'two-factor-authentication') {
    const resend = document.createElement('button');
    resend.type = 'button'; resend.className = 'decline'; resend.dataset.resend = 'true'; resend.textContent = 'Send a new code';
    resend.addEventListener('click', async () => {
      try { await call('/participants/' + encodeURIComponent(a.participantId) + '/authentication/code', {}); say('A new code is on its way.', 'info'); }
      catch (e) { failed('Could not send a code', e); }
    });
    form.appendChild(resend);
  }
  actions.appendChild(form);
  if (a.lockedUntil) {
    input.disabled = true; submit.disabled = true; form.dataset.locked = 'true';
    say('Too many failed attempts for ' + who.name + '. Try again after ' + new Date(a.lockedUntil).toLocaleTimeString() + '.', 'error');
  } else {
    say(who.name + ', please confirm who you are before the documents are shown' + (a.sentTo ? ' (code sent to ' + a.sentTo + ')' : '') + '.', 'info');
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await call('/participants/' + encodeURIComponent(a.participantId) + '/authenticate', { step: a.step, answer: input.value });
      post('esign:authenticated', { participantId: a.participantId, step: a.step });
      await refresh();
    } catch (err) {
      if (err.status === 423) { await refresh(); return; }
      failed('Not accepted', err); if (state.stopped) return;
      say(err.message, 'error'); input.value = ''; input.focus();
    }
  });
}
async function refresh() {
  let view;
  try { view = await call('/view'); } catch (e) { failed('Could not reload the page', e); return; }
  // An ended transaction, or the session expiring, answers with a refusal instead of a view.
  if (view.refusal) { failed('Stopped', new Error(STOPS[view.refusal] ? STOPS[view.refusal].title : view.refusal), view.refusal === 'link_expired' ? 'session_expired' : view.refusal); return; }
  state.view = view;
  start();
}
// A transaction can end while the page sits open (cancelled, expired, declined by another signer): look now and then.
setInterval(async () => {
  if (state.stopped || state.declined) return;
  try { const view = await call('/view'); if (view.refusal) await refresh(); } catch {}
}, 20000);
function start() {
  if (state.view.authentication && state.view.authentication.length > 0) return authenticate();
  VIEW.documents = state.view.documents;
  render();
  if (canvases.size === 0) drawPages();
}
async function apply(t, el) {
  let value = t.suggested;
  if (t.type === 'FREEFORMTEXTTAGTEMPLATEANNOTATION' || t.type === 'TEXTANNOT') {
    const typed = window.prompt('Text for this field', t.suggested);
    if (typed === null || typed.trim() === '') return;
    value = typed;
  }
  // A second click while the call runs must not apply the tag twice.
  el.disabled = true;
  try {
    await call('/participants/' + encodeURIComponent(t.participantId) + '/tags', { docIndex: t.docIndex, tagIndex: t.tagIndex, value });
    t.applied = value;
    post('esign:tag-applied', { participantId: t.participantId, docIndex: t.docIndex, tagIndex: t.tagIndex, tagType: t.type });
    render();
  } catch (e) { el.disabled = false; failed('Could not apply the field', e); }
}
async function finish(p) {
  try {
    const result = await call('/participants/' + encodeURIComponent(p.id) + '/finish', {});
    p.finished = true; p.yourTurn = false;
    post('esign:participant-signed', { participantId: p.id });
    if (result && result.completed) post('esign:completed', { transactionId: VIEW.transactionId });
    render();
  } catch (e) { failed('Could not finish signing', e); }
}
function askReason(declining) {
  const actions = document.getElementById('actions');
  actions.textContent = '';
  const form = document.createElement('form');
  form.className = 'decline';
  const label = document.createElement('label');
  label.textContent = 'Why do you decline to sign? The sender will see your reason.';
  const reason = document.createElement('textarea');
  reason.name = 'reason'; reason.maxLength = 500; reason.value = declining.reason;
  reason.addEventListener('input', () => { declining.reason = reason.value; });
  label.appendChild(reason);
  const confirm = document.createElement('button');
  confirm.type = 'submit'; confirm.className = 'decline'; confirm.textContent = 'Decline to sign';
  const back = document.createElement('button');
  back.type = 'button'; back.className = 'finish'; back.textContent = 'Back to signing';
  back.addEventListener('click', () => { state.declining = null; render(); });
  form.append(label, back, confirm);
  // The submitted form's own text: what the signer sees is what is sent, whatever re-render came between.
  form.addEventListener('submit', (e) => { e.preventDefault(); decline(declining.participant, reason.value || declining.reason); });
  actions.appendChild(form);
}
async function decline(p, reason) {
  try {
    await call('/participants/' + encodeURIComponent(p.id) + '/decline', { reason });
    post('esign:declined', { participantId: p.id });
    state.declining = null; state.declined = true;
    document.getElementById('docs').textContent = '';
    document.getElementById('actions').textContent = '';
    say('You declined to sign. The sender has been told.', 'info');
    document.body.dataset.declined = 'true';
  } catch (e) { failed('Could not decline', e); }
}
post('esign:loaded', { participantIds: VIEW.participants.map(p => p.id) });
start();
</script></body></html>`;
}
