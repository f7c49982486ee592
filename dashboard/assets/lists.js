// redstate dashboard: the long lists, one page at a time, so a page stays quick with thousands
// of queues, dead letters or builds: the queue list (paged by name, filtered), a queue's dead
// letters (paged by offset, the total from the queue's counts) and the builds (paged by the
// listing's cursor). Each paged* function fills the box it is given (a live section's box
// re-renders it on a change). Uses el, api, table, button, ... from app.js (at run time).
'use strict';

// listPage is the rows of one page of the long lists.
const listPage = 50;

// pageNav renders First page / Next buttons (and the place in the list) below a page.
function pageNav(cls, where, first, next) {
  return el('div', { class: 'actions pager ' + cls },
    where ? el('span', { class: 'muted', text: where }) : '',
    first ? el('button', { type: 'button', class: 'first-page', onclick: first }, 'First page') : '',
    next ? el('button', { type: 'button', class: 'next-page', onclick: next }, 'Next') : '');
}

// hashWith is the current page's address with the given parameters changed (empty: removed).
function hashWith(page, changes) {
  const p = params();
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === '') p.delete(k); else p.set(k, String(v));
  }
  const q = p.toString();
  return '#/' + page + (q ? '?' + q : '');
}

// queueFilter is the form that filters the queue list by name (parameter qmatch); it stays
// outside the list so a refreshed list never drops what is being typed.
function queueFilter(p) {
  return el('form', { class: 'search', id: 'queue-filter', onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = hashWith('queues', { qmatch: ev.currentTarget.elements.qmatch.value.trim(), qafter: '', queue: '' });
  } }, el('input', { name: 'qmatch', placeholder: 'filter queues by name', 'aria-label': 'filter queues by name', value: p.get('qmatch') || '' }),
  el('button', { type: 'submit', text: 'Filter' }));
}

// pagedQueueTable renders into box one page of the configured queues with their counts (admin
// role) and the total, and returns the page's queues. Parameters: qmatch (the filter), qafter
// (the previous page's last name).
async function pagedQueueTable(box, p) {
  const q = new URLSearchParams({ limit: String(listPage) });
  if (p.get('qmatch')) q.set('match', p.get('qmatch'));
  if (p.get('qafter')) q.set('cursor', p.get('qafter'));
  const page = await api('GET', '/v1/queues?' + q.toString());
  const queues = page.queues;
  const shown = queues.length ? `${queues[0].name} … ${queues[queues.length - 1].name}` : '';
  box.append(
    el('p', { class: 'muted', id: 'queue-count', text: `${page.total} queue${page.total === 1 ? '' : 's'}${p.get('qmatch') ? ' matching “' + p.get('qmatch') + '”' : ''}` +
      (page.total > listPage ? `, ${listPage} a page` : '') }),
    el('div', { id: 'queue-page' }, table(['queue', 'scheduled', 'pending', 'running', 'retrying', 'dead', ''], queues.map((x) => [
      el('a', { href: hashWith('queues', { queue: x.name, state: '', job: '', cursor: '', dstart: '' }), text: x.name }), x.stats.scheduled ?? 0, x.stats.pending, x.stats.running, x.stats.retrying,
      el('span', { class: x.stats.dead ? 'warn' : '', text: x.stats.dead }), x.error ? el('span', { class: 'error', text: x.error }) : '']))),
    pageNav('queue-pages', page.total > listPage ? shown : '',
      p.get('qafter') ? () => { location.hash = hashWith('queues', { qafter: '' }); } : null,
      page.next ? () => { location.hash = hashWith('queues', { qafter: page.next }); } : null));
  return queues;
}

// pagedDeadLetters renders into box one page of a queue's dead letters (admin role), newest
// first, with the queue's whole count, Requeue all / Purge and a Requeue per letter. Parameter:
// dstart (the offset).
async function pagedDeadLetters(box, name) {
  const p = params();
  const start = Math.max(0, parseInt(p.get('dstart') || '0', 10) || 0);
  const path = '/v1/queues/' + seg(name);
  const [dead, stats] = await Promise.all([api('GET', path + '/dead?start=' + start + '&count=' + listPage), api('GET', path + '/stats')]);
  const total = stats.dead;
  const letters = dead.deadLetters;
  const actions = [];
  if (total > 0) {
    actions.push(button('Requeue all', async () => {
      const r = await api('POST', path + '/dead/requeue-all');
      return `requeued ${r.requeued} jobs`;
    }));
    actions.push(button('Purge dead letters…', async () => {
      if (!await confirmAction(`Delete all ${total} dead letters of ${name}? This cannot be undone.`)) return '';
      const r = await api('DELETE', path + '/dead');
      return `purged ${r.purged} dead letters`;
    }, 'danger'));
  }
  const where = total > listPage ? `${letters.length ? start + 1 : start}–${start + letters.length} of ${total}, newest first` : '';
  box.append(el('h3', { text: `Dead letters (${total})` }), el('div', { class: 'actions' }, actions),
    el('div', { id: 'dead-letter-page' }, table(['record', 'job', 'retries', 'failed at', 'last error', ''], letters.map((d) => {
      const m = d.message || {};
      return [m.RecordId ?? '', m.JobId || '', m.RetryCount ?? '', fmtTime(m.FailedAt), el('span', { class: 'mono', text: m.LastError || (d.message ? '' : d.raw) }),
        button('Requeue', async () => { await api('POST', path + '/dead/requeue', { raw: d.raw }); return 'requeued'; })];
    }))),
    pageNav('dead-pages', where,
      start > 0 ? () => { location.hash = hashWith('queues', { dstart: '' }); } : null,
      start + letters.length < total && letters.length === listPage ? () => { location.hash = hashWith('queues', { dstart: start + listPage }); } : null));
}

// pagedBuildList renders into box one page of the builds (all, or a project's) with a Next
// button following the listing's cursor. Parameter: cursor. The whole listing is in the
// registry's own order (a scan of the keys), so a page is as quick with 100,000 builds as with 100.
async function pagedBuildList(box, p) {
  const base = p.get('project') ? '/v1/projects/' + seg(p.get('project')) + '/builds' : '/v1/builds';
  const q = new URLSearchParams({ limit: String(listPage) });
  if (p.get('cursor')) q.set('cursor', p.get('cursor'));
  const page = await api('GET', base + '?' + q.toString());
  box.append(el('div', { id: 'build-page' }, table(['build', 'project', 'status', 'platforms', 'updated'], page.builds.map((b) => [
    el('a', { href: '#/builds?build=' + seg(b.buildId), text: b.buildId }), b.projectId, badge(b.status),
    (b.platforms || []).join(', '), fmtTime(b.updatedAt)])),
  pageNav('build-pages', '',
    p.get('cursor') ? () => { location.hash = hashWith('builds', { cursor: '' }); } : null,
    page.cursor ? () => { location.hash = hashWith('builds', { cursor: page.cursor }); } : null)));
}
