// redstate dashboard. Plain JavaScript, no dependencies. Every value from the server is put in
// the page with textContent (never innerHTML), and links are made only from http(s) URLs.
'use strict';

const state = { session: null };

// el builds an element: attrs may hold class, text, href (checked), title, type, value,
// placeholder, name, data-*, aria-*, and on* handlers; children are nodes or strings (as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else if (k === 'class') e.className = v;
    else if (k === 'href') { const u = safeURL(v); if (u) e.href = u; }
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// safeURL returns u if it is an http(s) URL or a same-page fragment, else null: a
// "javascript:" or "data:" URL never becomes a link.
function safeURL(u) {
  if (typeof u !== 'string') return null;
  if (u.startsWith('#')) return u;
  try {
    const p = new URL(u, location.href);
    return (p.protocol === 'http:' || p.protocol === 'https:') ? p.href : null;
  } catch (_) { return null; }
}

// link renders u as a link when safe, else as plain text.
function link(u, label) {
  if (u === undefined || u === null || u === '') return '';
  const ok = safeURL(u);
  return ok ? el('a', { href: ok, rel: 'noopener noreferrer', target: '_blank', text: label || u }) : el('span', { class: 'unsafe', title: 'not an http(s) URL', text: u });
}

class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

// api calls the JSON API with the session cookie (and the CSRF token on writes).
async function api(method, path, body) {
  const opts = { method, credentials: 'same-origin', headers: { 'Accept': 'application/json' } };
  if (method !== 'GET' && method !== 'HEAD') {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body || {});
    if (state.session && state.session.csrf) opts.headers['X-CSRF-Token'] = state.session.csrf;
  }
  const r = await fetch(path, opts);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
  if (!r.ok) {
    if (r.status === 401 && state.session && state.session.authEnabled) { state.session.loggedIn = false; }
    throw new APIError(r.status, data && data.code, (data && data.message) || (r.status + ' ' + r.statusText));
  }
  return data;
}

const seg = (s) => encodeURIComponent(String(s));
const role = () => (state.session && state.session.role) || 'admin';
const canWrite = () => role() === 'write' || role() === 'admin';
const isAdmin = () => role() === 'admin';

function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

function badge(status) {
  return el('span', { class: 'badge ' + String(status).toLowerCase().replace(/[^a-z_-]/g, ''), text: status });
}

function table(headers, rows) {
  return el('div', { class: 'scroll' }, el('table', {},
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', { text: h })))),
    el('tbody', {}, rows.length ? rows.map((r) => el('tr', {}, r.map((c) => el('td', {}, c))))
      : el('tr', {}, el('td', { colspan: headers.length, class: 'empty', text: 'nothing here' })))));
}

function errorBox(err) {
  return el('p', { class: 'error', role: 'alert', text: (err.code ? err.code + ': ' : '') + err.message });
}

function flash(view, text, ok) {
  const p = el('p', { class: ok ? 'ok' : 'error', role: 'status', text });
  view.prepend(p);
  setTimeout(() => p.remove(), 6000);
}

// confirmAction asks before a destructive action.
function confirmAction(text) {
  const d = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = text;
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.showModal();
  });
}

// button renders an action button that calls fn, shows its outcome and re-renders.
function button(label, fn, cls) {
  return el('button', { class: cls || '', type: 'button', onclick: async (ev) => {
    const b = ev.currentTarget;
    b.disabled = true;
    let msg = '', err = null;
    try { msg = await fn(); } catch (e) { err = e; }
    try { await render(); } catch (_) { /* render shows its own errors */ }
    b.disabled = false;
    const view = document.getElementById('view');
    if (err) flash(view, (err.code ? err.code + ': ' : '') + err.message, false);
    else if (msg) flash(view, msg, true);
  } }, label);
}

// form renders a one-line search form.
function searchForm(fields, submit) {
  const inputs = fields.map((f) => el('input', { name: f.name, placeholder: f.placeholder, value: f.value || '', 'aria-label': f.placeholder }));
  return el('form', { class: 'search', onsubmit: (ev) => { ev.preventDefault(); submit(Object.fromEntries(inputs.map((i) => [i.name, i.value.trim()]))); } },
    inputs, el('button', { type: 'submit', text: 'Show' }));
}

function params() {
  const [, query] = location.hash.split('?');
  return new URLSearchParams(query || '');
}

function go(page, p) {
  const q = new URLSearchParams(p).toString();
  location.hash = '#/' + page + (q ? '?' + q : '');
}

// liveSection returns an element that fill(container) renders and renders again on every change
// of the live topics (live.js): one fill at a time, a change during a fill runs it once more
// after it. The content is replaced only when the new rendering differs, so an unchanged
// section keeps its focus and selection. Call the returned element's refresh() once to render it
// first; the page awaits that before it is shown.
function liveSection(topics, fill, attrs) {
  const box = el('div', Object.assign({ class: 'live-section' }, attrs || {}));
  let running = null, again = false, last = null;
  const run = async () => {
    if (running) { again = true; return running; }
    running = (async () => {
      do {
        again = false;
        const fresh = el('div', {});
        try { await fill(fresh); } catch (e) {
          if (e.status === 401) { state.session = null; render(); return; }
          fresh.append(errorBox(e));
        }
        const markup = fresh.innerHTML; // compared only, never assigned
        if (markup !== last) {
          last = markup;
          box.replaceChildren(...fresh.childNodes);
          document.body.dataset.updated = String(Date.now());
        }
      } while (again);
    })();
    try { await running; } finally { running = null; }
  };
  const gen = live.page;
  for (const t of topics.filter(Boolean)) live.on(t, run, gen);
  box.refresh = run;
  return box;
}

// section renders a live section into view at once (awaiting its first rendering).
async function section(view, topics, fill, attrs) {
  const box = liveSection(topics, fill, attrs);
  view.append(box);
  await box.refresh();
  return box;
}

// ---- pages ----

async function overviewPage(view) {
  view.append(el('h1', { text: 'Overview' }));
  await section(view, ['overview'], overviewFill, { id: 'overview' });
}

async function overviewFill(view) {
  const o = await api('GET', '/v1/overview');
  const r = o.redis;
  view.append(
    el('section', { class: 'cards' },
      el('div', { class: 'card' }, el('h2', { text: 'Redis' }),
        el('p', {}, badge(r.mode === 'memory' ? 'memory' : (r.reachable ? 'reachable' : 'unreachable'))),
        el('p', { text: 'mode: ' + r.mode }),
        r.describe ? el('p', { class: 'mono', text: r.describe }) : '',
        r.reachable ? el('p', { text: 'ping ' + r.latencyMs.toFixed(2) + ' ms' }) : '',
        r.error ? el('p', { class: 'error', text: r.error }) : ''),
      el('div', { class: 'card', id: 'server-card' }, el('h2', { text: 'Server' }), el('p', { text: 'version ' + o.version }),
        el('p', { class: 'mono', text: buildLine(o.build) }),
        o.degraded.length ? el('p', { class: 'error', text: 'degraded: ' + o.degraded.join('; ') }) : el('p', { text: 'nothing degraded' }))),
    el('h2', { text: 'Blocks' }),
    table(['block', 'status', 'backend', 'detail'], o.blocks.map((b) => [b.name, badge(b.status), b.backend, b.detail || ''])));
}

// buildLine says what the server was built from: revision (dirty), commit time, Go and platform.
function buildLine(b) {
  const parts = [];
  if (b.revision) parts.push(b.revision.slice(0, 12) + (b.dirty ? ' (dirty)' : ''));
  if (b.buildTime && !b.buildTime.startsWith('0001-')) parts.push('built from ' + fmtTime(b.buildTime));
  parts.push(b.goVersion + ' ' + b.platform);
  return parts.join(' · ');
}

function platformRows(b) {
  return Object.values(b.platformResults || {}).map((p) => [
    p.platform, badge(p.status),
    el('progress', { max: 100, value: p.progress || 0, title: (p.progress || 0) + '%' }),
    link(p.downloadUrl, 'download'), link(p.logUrl, 'log'), p.errorMessage || '', fmtTime(p.startedAt), fmtTime(p.completedAt)]);
}

function buildView(b) {
  return el('section', { class: 'build', id: 'build-detail' },
    el('h2', {}, 'Build ', el('span', { class: 'mono', text: b.buildId }), ' ', badge(b.status)),
    el('p', { text: 'project ' + b.projectId + ' · updated ' + fmtTime(b.updatedAt) }),
    table(['platform', 'status', 'progress', 'download', 'log', 'error', 'started', 'completed'], platformRows(b)));
}

async function buildsPage(view) {
  const p = params();
  view.append(el('h1', { text: 'Builds' }),
    searchForm([{ name: 'build', placeholder: 'build id', value: p.get('build') }, { name: 'project', placeholder: 'project id', value: p.get('project') }],
      (v) => go('builds', Object.fromEntries(Object.entries(v).filter(([, x]) => x)))));
  if (p.get('build')) {
    // Live progress: the build's topic follows the store's change events.
    const id = p.get('build');
    await section(view, ['build:' + id], async (box) => {
      try { box.append(buildView(await api('GET', '/v1/builds/' + seg(id)))); } catch (e) {
        if (e.status !== 404) throw e;
        box.append(el('p', { class: 'empty', text: 'no such build (yet)' }));
      }
    });
    return;
  }
  view.append(buildCharts());
  const project = p.get('project');
  await section(view, [project ? 'project:' + project : 'builds'], (box) => pagedBuildList(box, p), { id: 'builds-list' });
}

// jobStates are the states a job with a record can be in, in the order of its life.
const jobStates = ['scheduled', 'pending', 'active', 'retrying', 'done', 'dead', 'cancelled'];
// cancellable are the states DELETE /v1/queues/{queue}/jobs/{id} cancels (an active job is
// asked to stop); a dead job is requeued instead.
const cancellable = ['scheduled', 'pending', 'active', 'retrying'];

// queueHash is the dashboard address of a queue's page with the given parameters.
function queueHash(p) {
  return '#/queues?' + new URLSearchParams(Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined && v !== null && v !== ''))).toString();
}

// jsonText renders a JSON value readably, as text (the caller puts it in the page with
// textContent, never as markup).
function jsonText(v) {
  if (v === undefined || v === null) return '';
  try { return JSON.stringify(v, null, 2); } catch (_) { return String(v); }
}

// preview shortens s to n characters for a table cell; the whole value is in the job view.
function preview(s, n) {
  s = String(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// lastError is the error of a job's last failed attempt (or its dead letter's reason).
function lastError(j) {
  const failed = (j.attempts || []).filter((a) => a.error);
  return failed.length ? failed[failed.length - 1].error : ((j.message && j.message.LastError) || '');
}

// jobActions are the buttons of what a job's state allows (write role): Cancel while it is
// scheduled, pending, retrying or active (with confirmation), Requeue when it is dead.
function jobActions(name, j) {
  if (!canWrite()) return [];
  const path = '/v1/queues/' + seg(name) + '/jobs/' + seg(j.id);
  if (cancellable.includes(j.state) && !j.cancelRequested) {
    return [button('Cancel', async () => {
      if (!await confirmAction(`Cancel job ${j.id} (${j.state}) of ${name}?`)) return '';
      const r = await api('DELETE', path);
      return r.state === 'active' ? `cancel of job ${j.id} requested: it stops running` : `job ${j.id} cancelled`;
    }, 'danger cancel-job')];
  }
  if (j.state === 'dead') {
    return [button('Requeue', async () => { await api('POST', path + '/requeue'); return `job ${j.id} requeued`; }, 'requeue-job')];
  }
  return [];
}

// pauseBar shows whether the queue's workers take jobs and the Pause or Resume button. The
// paused flag comes with the queue's stats (admin role); without it both buttons are offered.
async function pauseBar(name) {
  let paused = null, unknown = '';
  try { paused = (await api('GET', '/v1/queues/' + seg(name) + '/stats')).paused; }
  catch (e) { unknown = e.status === 403 ? 'pause state: needs the admin role to read' : 'pause state unknown: ' + e.message; }
  const acts = [];
  if (canWrite()) {
    if (paused !== true) acts.push(button('Pause', async () => { await api('POST', '/v1/queues/' + seg(name) + '/pause'); return `${name} paused: its workers take no jobs`; }, 'pause-queue'));
    if (paused !== false) acts.push(button('Resume', async () => { await api('POST', '/v1/queues/' + seg(name) + '/resume'); return `${name} resumed`; }, 'resume-queue'));
  }
  const status = paused === null ? el('span', { class: 'muted', text: unknown })
    : el('span', {}, paused ? badge('paused') : el('span', { class: 'badge ok', text: 'running' }), paused ? ' workers take no jobs (enqueue still works)' : ' workers take jobs');
  return el('div', { class: 'actions', id: 'queue-pause' }, status, acts);
}

// jobView shows one job: state, times, attempts with their errors, result and payload.
function jobView(name, j) {
  const m = j.message || {};
  const facts = [['state', badge(j.state)], ['enqueued', fmtTime(j.enqueuedAt)], ['due', fmtTime(j.processAt)], ['finished', fmtTime(j.finishedAt)],
    ['retries', m.RetryCount ?? 0], ['max retries', m.Job && m.Job.MaxRetries !== undefined ? m.Job.MaxRetries : 'the queue\'s'],
    ['timeout', m.Job && m.Job.TimeoutMs ? (m.Job.TimeoutMs / 1000) + ' s' : ''],
    ['cancel requested', j.cancelRequested ? 'yes' : '']].filter(([, v]) => v !== '');
  return el('section', { class: 'job', id: 'job-detail' },
    el('h3', {}, 'Job ', el('span', { class: 'mono', text: j.id }), ' ', badge(j.state)),
    el('dl', { class: 'facts' }, facts.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', {}, v)])),
    el('div', { class: 'actions' }, jobActions(name, j)),
    el('h4', { text: `Attempts (${j.attempts.length})` }),
    table(['#', 'started', 'ended', 'consumer', 'error'], j.attempts.map((a, i) => [i + 1, fmtTime(a.start), a.end ? fmtTime(a.end) : 'running', a.consumer || '',
      el('span', { class: 'mono error wide', text: a.error || '' })])),
    j.result !== undefined ? [el('h4', { text: 'Result' }), el('pre', { class: 'json', id: 'job-result', text: jsonText(j.result) })] : '',
    el('h4', { text: 'Payload' }), el('pre', { class: 'json', id: 'job-payload', text: jsonText(m.Payload) }));
}

// jobList shows one page of the queue's jobs in a state: tabs for the states and the search
// form stay put, the table (and the Next button following the page's cursor) is live.
function jobList(name, p) {
  const st = jobStates.includes(p.get('state')) ? p.get('state') : 'pending';
  const limit = p.get('limit') || '50';
  const table_ = liveSection(['queue:' + name], async (box) => {
    const page = await api('GET', '/v1/queues/' + seg(name) + '/jobs?state=' + seg(st) + '&limit=' + seg(limit) + (p.get('cursor') ? '&cursor=' + seg(p.get('cursor')) : ''));
    box.append(table(['job', 'state', 'retries', 'enqueued', st === 'scheduled' ? 'due' : 'finished', 'last error', 'payload', ''], page.jobs.map((j) => [
      el('a', { href: queueHash({ queue: name, state: st, job: j.id }), text: j.id }), badge(j.state), (j.message && j.message.RetryCount) ?? 0,
      fmtTime(j.enqueuedAt), fmtTime(st === 'scheduled' ? j.processAt : j.finishedAt), el('span', { class: 'mono error wide', text: lastError(j) }),
      el('span', { class: 'mono wide', text: preview(JSON.stringify(j.message && j.message.Payload) ?? '', 80) }), el('span', { class: 'actions' }, jobActions(name, j))])));
    const nav = [];
    if (p.get('cursor')) nav.push(el('button', { type: 'button', class: 'first-page', onclick: () => go('queues', { queue: name, state: st, limit: p.get('limit') || '' }) }, 'First page'));
    if (page.next) nav.push(el('button', { type: 'button', class: 'next-page', onclick: () => location.hash = queueHash({ queue: name, state: st, limit: p.get('limit'), cursor: page.next }) }, 'Next'));
    box.append(el('div', { class: 'actions' }, nav));
  }, { id: 'jobs-table' });
  const out = el('section', { id: 'jobs' }, el('h3', { text: 'Jobs' }),
    el('nav', { class: 'tabs', 'aria-label': 'job states' }, jobStates.map((s) => el('a', { href: queueHash({ queue: name, state: s, limit: p.get('limit') }),
      class: s === st ? 'active' : '', 'aria-current': s === st ? 'page' : false, 'data-state': s, text: s }))),
    searchForm([{ name: 'job', placeholder: 'job id', value: p.get('job') }], (v) => go('queues', { queue: name, state: st, job: v.job })),
    table_);
  return { out, ready: table_.refresh() };
}

async function queuesPage(view) {
  const p = params();
  view.append(el('h1', { text: 'Queues' }));
  // The list of queues and their stats is for the admin role; anyone who reads may open a
  // queue's jobs by name.
  let names = [];
  if (isAdmin()) {
    view.append(queueFilter(p));
    await section(view, ['queues'], async (box) => { names = (await pagedQueueTable(box, p)).map((q) => q.name); }, { id: 'queue-list' });
  } else {
    view.append(searchForm([{ name: 'queue', placeholder: 'queue name', value: p.get('queue') }], (v) => go('queues', v.queue ? { queue: v.queue } : {})));
  }
  const name = p.get('queue') || names[0];
  if (!name) return;
  const topic = 'queue:' + name;
  const sec = el('section', { id: 'queue-detail' }, el('h2', {}, 'Queue ', el('span', { class: 'mono', text: name })));
  view.append(sec);
  await section(sec, [topic], async (box) => box.append(await pauseBar(name)));
  if (p.get('job')) {
    await section(sec, [topic], async (box) => box.append(jobView(name, await api('GET', '/v1/queues/' + seg(name) + '/jobs/' + seg(p.get('job'))))));
  }
  const jobs = jobList(name, p);
  sec.append(jobs.out);
  await jobs.ready;
  sec.append(queueCharts(name));
  if (!isAdmin()) return;
  await section(sec, [topic], (box) => pagedDeadLetters(box, name), { id: 'dead-letters' });
}

// taskActions are the buttons of the controls the task's status allows, as the API's task
// document lists them (actions: pause, resume, cancel, retry), that the caller's role may use:
// pause, resume and cancel need write, retry admin. They act on the tenant's current task.
function taskActions(t, tenant) {
  const allowed = t.actions || [];
  const acts = [];
  if (canWrite()) {
    for (const a of ['pause', 'resume', 'cancel'].filter((x) => allowed.includes(x))) {
      acts.push(button(a[0].toUpperCase() + a.slice(1), async () => {
        if (a === 'cancel' && !await confirmAction(`Cancel the task of tenant ${tenant}?`)) return '';
        await api('POST', '/v1/executor/tenants/' + seg(tenant) + '/' + a);
        return a + ' requested';
      }, (a === 'cancel' ? 'danger ' : '') + a + '-task'));
    }
  }
  if (isAdmin() && allowed.includes('retry')) {
    acts.push(button('Retry from checkpoint', async () => {
      const r = await api('POST', '/v1/executor/tenants/' + seg(tenant) + '/retry', { fromCheckpoint: true });
      return 'retry started: task ' + r.taskId;
    }, 'retry-task'));
  }
  return acts;
}

function taskView(t, tenant) {
  const stages = (t.stageNames || []).map((s, i) => el('li', { class: i <= t.lastCompletedStageIndex ? 'done' : (s === t.currentStage ? 'current' : ''), text: s }));
  return el('section', { class: 'task', id: 'task-detail' },
    el('h2', {}, 'Task ', el('span', { class: 'mono', text: t.taskId }), ' ', badge(t.status), t.pauseRequested ? [' ', badge('pause requested')] : ''),
    el('p', { text: `tenant ${t.tenantId} · plan ${t.planId} · ${t.completedStages}/${(t.stageNames || []).length} stages · lock ${t.lockHeld ? 'held' : 'free'} · checkpoint ${t.checkpoint}` }),
    t.reason ? el('p', { class: 'error', text: t.reason }) : '',
    el('progress', { max: 1, value: t.progress || 0 }),
    el('ol', { class: 'stages' }, stages),
    el('div', { class: 'actions' }, taskActions(t, tenant)));
}

// executorStateFill shows the plans, tenant locks, checkpoints and key counts (admin).
async function executorStateFill(view) {
  const st = await api('GET', '/v1/executor/state');
  const left = (ms) => (ms > 0 ? (ms >= 60000 ? Math.round(ms / 60000) + ' min' : (ms / 1000).toFixed(1) + ' s') : '');
  view.append(el('h2', { text: 'Plans' }),
    table(['plan', 'status', 'progress', 'tasks', 'updated'], st.plans.map((p) => [el('a', { href: '#/executor?plan=' + seg(p.planId), text: p.planId }),
      badge(p.status), el('progress', { max: 1, value: p.progress || 0 }), (p.taskIds || []).length, fmtTime(p.updatedAt)])),
    el('h2', { text: 'Tenant locks' }),
    table(['tenant', 'holder', 'fence', 'time left'], st.locks.map((l) => [el('a', { href: '#/executor?tenant=' + seg(l.tenantId), text: l.tenantId }),
      l.holder, l.fence || '', left(l.timeLeftMs)])),
    el('h2', { text: 'Checkpoints' }),
    table(['task', 'version', 'stages done', 'saved', 'error'], st.checkpoints.map((c) => [el('a', { href: '#/executor?task=' + seg(c.taskId), text: c.taskId }),
      c.version, (c.completedStages || []).join(', '), fmtTime(c.savedAt), c.error || ''])),
    el('h2', { text: 'Keys' }), table(['type', 'count'], Object.entries(st.keys).map(([k, v]) => [k, v])));
}

async function executorPage(view) {
  const p = params();
  view.append(el('h1', { text: 'Executor' }),
    searchForm([{ name: 'tenant', placeholder: 'tenant id', value: p.get('tenant') }, { name: 'plan', placeholder: 'plan id', value: p.get('plan') }],
      (v) => go('executor', Object.fromEntries(Object.entries(v).filter(([, x]) => x)))),
    executorCharts());
  if (p.get('tenant')) {
    const tenant = p.get('tenant');
    await section(view, ['tenant:' + tenant], async (box) => {
      box.append(taskView(await api('GET', '/v1/executor/tenants/' + seg(tenant) + '/task'), tenant));
      const cp = await api('GET', '/v1/executor/tenants/' + seg(tenant) + '/checkpoint');
      box.append(el('p', { text: `checkpoint: ${cp.checkpoint}${cp.checkpointError ? ' (' + cp.checkpointError + ')' : ''}` }));
    });
  }
  if (p.get('task')) {
    await section(view, ['task:' + p.get('task')], async (box) => {
      const t = await api('GET', '/v1/executor/tasks/' + seg(p.get('task')));
      box.append(taskView(t, t.tenantId));
    });
  }
  if (p.get('plan')) {
    await section(view, ['plan:' + p.get('plan')], async (box) => {
      const plan = await api('GET', '/v1/executor/plans/' + seg(p.get('plan')));
      box.append(el('h2', {}, 'Plan ', el('span', { class: 'mono', text: plan.planId }), ' ', badge(plan.status)),
        el('progress', { max: 1, value: plan.progress || 0 }),
        table(['task', 'tenant', 'status', 'stages', 'current'], plan.tasks.map((t) => [el('a', { href: '#/executor?task=' + seg(t.taskId), text: t.taskId }),
          el('a', { href: '#/executor?tenant=' + seg(t.tenantId), text: t.tenantId }), el('span', {}, badge(t.status), t.pauseRequested ? [' ', badge('pause requested')] : ''),
          `${t.completedStages}/${(t.stageNames || []).length}`, t.currentStage || ''])));
    }, { id: 'plan-detail' });
  }
  if (isAdmin()) await section(view, ['executor'], executorStateFill, { id: 'executor-state' });
}

async function indexPage(view) {
  view.append(el('h1', { text: 'Index' }));
  view.append(indexCharts());
  await section(view, ['index'], indexFill, { id: 'index-status' });
}

async function indexFill(view) {
  const s = await api('GET', '/v1/index/status');
  const scope = s.scope === 'shared' ? 'all instances (shared counters, each instance adds its counts every 5 s)'
    : 'this instance since start (the shared counters could not be read)';
  view.append(el('p', { text: `${scope}: ${s.skipped} events of undeclared tables skipped, ${s.unreadable} unreadable` }),
    table(['table', 'applied', 'stale (skipped by version)', 'failed'], s.tables.map((t) => [t.db + '.' + t.table, t.applied, t.stale, t.failed])),
    el('h2', { text: 'Sources' }),
    table(['source', 'position', 'snapshot', 'backfilled rows', 'lag (bytes)', 'lag (s)', 'lag (records)', 'pending events', 'events', 'events/s'], s.sources.map((x) => [
      x.name, x.position || '', x.snapshotPercent !== undefined ? x.snapshotPercent.toFixed(1) + ' %' : '', x.backfilledRows, x.lagBytes,
      x.lagSeconds.toFixed(1), x.groupLagRecords !== undefined ? `${x.lagRecords} here, ${x.groupLagRecords} in the group` : x.lagRecords,
      x.pendingEvents || 0, x.events, (x.eventsPerSecond || 0).toFixed(1)])));
  for (const x of s.sources) if (x.kafkaGroup) view.append(...kafkaGroupSection(x.kafkaGroup));
}

// fmtSeconds renders a duration in seconds (1.5 s, 2 min).
const fmtSeconds = (n) => (n >= 120 ? Math.round(n / 60) + ' min' : (Math.round(n * 10) / 10) + ' s');

// kafkaGroupSection shows the Kafka source's whole consumer group: every partition of the
// topics with its owner and lag, a backlog on a partition that is not this instance's marked, the
// takeover time a killed instance's partitions wait, and the age or error of the last read.
function kafkaGroupSection(g) {
  const lag = g.partitions.reduce((n, p) => n + Math.max(p.lagRecords, 0), 0);
  const elsewhere = g.partitions.filter((p) => !p.self && p.lagRecords > 0);
  const read = g.readAt ? `read ${fmtSeconds(g.ageSeconds || 0)} ago (every ${fmtSeconds(g.lagIntervalSeconds)})` : 'not read yet';
  const out = [el('h2', { text: `Kafka consumer group ${g.group}` }),
    el('p', { text: `${g.state || 'state unknown'}, ${g.members} member${g.members === 1 ? '' : 's'}; ${lag} records waiting over the group; ${read}.` }),
    el('p', { class: 'muted', text: `A killed instance's partitions move to the others after about ${fmtSeconds(g.sessionTimeoutSeconds + g.heartbeatIntervalSeconds)}` +
      ` (session timeout ${fmtSeconds(g.sessionTimeoutSeconds)} + heartbeat ${fmtSeconds(g.heartbeatIntervalSeconds)}), at most ${fmtSeconds(g.sessionTimeoutSeconds + g.rebalanceTimeoutSeconds)}` +
      ` (+ rebalance timeout ${fmtSeconds(g.rebalanceTimeoutSeconds)}).` })];
  if (g.error) out.push(el('p', { class: 'error', role: 'alert', text: `The last read failed ${g.errorAt ? 'at ' + fmtTime(g.errorAt) : ''}: ${g.error}` }));
  if (elsewhere.length) {
    out.push(el('p', { class: 'warn', text: `${elsewhere.reduce((n, p) => n + p.lagRecords, 0)} records wait on ${elsewhere.length} partition${elsewhere.length === 1 ? '' : 's'} ` +
      'this instance does not own; if their owner stopped, they move after the session timeout.' }));
  }
  const owner = (p) => (p.self ? el('strong', { text: 'this instance' }) : p.member ? `${p.clientId} on ${p.host} (${p.member})` : el('span', { class: 'warn', text: 'none (rebalancing)' }));
  out.push(table(['topic', 'partition', 'end offset', 'committed', 'lag (records)', 'owner'], g.partitions.map((p) => [
    p.topic, p.partition, p.endOffset, p.committedOffset < 0 ? 'none' : p.committedOffset,
    p.lagRecords < 0 ? el('span', { class: 'error', text: p.error || 'unknown' }) : (!p.self && p.lagRecords > 0 ? el('span', { class: 'warn', text: p.lagRecords }) : p.lagRecords),
    owner(p)])));
  return out;
}

async function feedPage(view) {
  const p = params();
  view.append(el('h1', { text: 'Feed' }));
  view.append(feedCharts());
  if (isAdmin()) {
    view.append(el('h2', { text: 'Fan-out backlog' }));
    await section(view, ['queues'], async (box) => {
      const { queues } = await api('GET', '/v1/queues?match=fanout&limit=50');
      const fq = queues.filter((q) => q.name.includes('fanout'));
      box.append(table(['queue', 'pending', 'running', 'retrying', 'dead'], fq.map((q) => [el('a', { href: '#/queues?queue=' + seg(q.name), text: q.name }), q.stats.pending, q.stats.running, q.stats.retrying, q.stats.dead])));
    }, { id: 'fanout-backlog' });
  }
  view.append(el('h2', { text: 'Unread counts of a user' }), searchForm([{ name: 'user', placeholder: 'user id', value: p.get('user') }], (v) => go('feed', v.user ? { user: v.user } : {})));
  if (p.get('user')) {
    const user = p.get('user');
    await section(view, [/^[1-9][0-9]*$/.test(user) ? 'feed:' + user : ''], async (box) => {
      const c = await api('GET', '/v1/feed/users/' + seg(user) + '/unread-counts');
      box.append(el('p', { text: `total unread: ${c.total}` }), table(['author', 'unread'], Object.entries(c.counts).map(([a, n]) => [a, n])));
    }, { id: 'unread-counts' });
  }
}

const pages = { overview: overviewPage, builds: buildsPage, queues: queuesPage, executor: executorPage, index: indexPage, feed: feedPage };

function loginPage(view) {
  const input = el('input', { type: 'password', name: 'token', placeholder: 'API token', autocomplete: 'current-password', 'aria-label': 'API token', required: true });
  const msg = el('p', { class: 'error', role: 'alert' });
  view.append(el('h1', { text: 'Log in' }), el('p', { text: 'Enter an API token. The session lasts 12 hours; the token itself is not kept by the browser.' }),
    el('form', { class: 'login', onsubmit: async (ev) => {
      ev.preventDefault();
      try { state.session = await api('POST', '/ui/login', { token: input.value }); input.value = ''; await render(); }
      catch (e) { msg.textContent = e.message; }
    } }, input, el('button', { type: 'submit', text: 'Log in' })), msg);
}

function renderWho() {
  const who = document.getElementById('who');
  who.replaceChildren();
  const s = state.session;
  if (!s || !s.authEnabled) { who.append(el('span', { class: 'muted', text: 'no auth configured' })); return; }
  if (!s.loggedIn) return;
  who.append(el('span', { text: `${s.name} (${s.role})` }), ' ',
    el('button', { type: 'button', class: 'link', onclick: async () => { await api('POST', '/ui/logout'); state.session = await api('GET', '/ui/session'); render(); } }, 'Log out'));
}

async function render() {
  // A page's sections subscribe while it renders; a render started later (a click during
  // this one) makes this one's subscriptions void.
  const gen = live.reset();
  const view = document.getElementById('view');
  const fresh = el('div', {});
  if (!state.session) state.session = await api('GET', '/ui/session');
  renderWho();
  const page = (location.hash.replace(/^#\//, '').split('?')[0]) || 'overview';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === page);
  if (state.session.authEnabled && !state.session.loggedIn) { loginPage(fresh); view.replaceChildren(fresh); return; }
  const fn = pages[page] || overviewPage;
  try { await fn(fresh); }
  catch (e) {
    if (e.status === 401) { state.session = null; return render(); }
    fresh.append(errorBox(e));
  }
  if (gen !== live.page) return;
  view.replaceChildren(...fresh.childNodes);
  document.body.dataset.page = page;
  document.body.dataset.ready = String(Date.now());
  live.connect();
}

window.addEventListener('hashchange', render);
window.addEventListener('DOMContentLoaded', render);
