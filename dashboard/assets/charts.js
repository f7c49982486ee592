// redstate dashboard charts: time series from GET /v1/stats/series drawn with uPlot
// (vendor/uplot, loaded before this file). A chart has a time axis, a y axis in the series'
// unit, a legend showing every series' value under the mouse (the latest values otherwise) and
// follows the page's window (15 min, 1 h, 24 h). Charts refresh while the page is visible and
// cost nothing in a hidden tab. Uses el and api from app.js (called only at run time).
'use strict';

// chartWindows are the windows the picker offers, with how often a chart refreshes in each
// (about one new point per refresh at the series' resolution, never more often than 2 s).
const chartWindows = { '15m': 2000, '1h': 5000, '24h': 30000 };

// chartWindowKey is where the chosen window is remembered between visits.
const chartWindowKey = 'redstate.chartWindow';

// chartMinSpan is the narrowest x range in seconds: a history younger than this is drawn over
// this span, so two points are not stretched across the whole width.
const chartMinSpan = 60;

// chartMaxSeries bounds the lines of one chart (the largest by their latest value are kept).
const chartMaxSeries = 12;

// chartPalette are the series colours, in order (readable on white, distinct for the usual
// colour-vision deficiencies in the first four).
const chartPalette = ['#1f6feb', '#cf222e', '#1a7f37', '#9a6700', '#8250df', '#0a7d8c', '#bc4c00', '#57606a', '#d4378c', '#4d7c0f', '#5a32a3', '#0969da'];

const charts = {
  window: chartWindows[localStorage.getItem(chartWindowKey)] ? localStorage.getItem(chartWindowKey) : '15m',
  panels: new Set(), // the live panels (figure elements with their state)
  timer: null,
};

// unitOf describes a series unit as the API names it: the y axis label, and how a value reads.
function unitOf(unit) {
  const num = (v, digits) => new Intl.NumberFormat(undefined, { maximumSignificantDigits: digits }).format(v);
  switch (unit) {
    case '1/s': return { axis: 'per second', fmt: (v) => num(v, 3) + '/s' };
    case '1/min': return { axis: 'per minute', fmt: (v) => num(v, 3) + '/min' };
    case 's': return { axis: 'seconds', fmt: fmtDuration };
    default: return { axis: unit && unit !== '1' ? unit : 'count', fmt: (v) => num(v, 4) };
  }
}

// fmtDuration renders seconds readably: 850 µs, 12.5 ms, 3.2 s, 4.5 min, 2.1 h.
function fmtDuration(v) {
  const n = (x) => new Intl.NumberFormat(undefined, { maximumSignificantDigits: 3 }).format(x);
  const a = Math.abs(v);
  if (a === 0) return '0 s';
  if (a < 0.001) return n(v * 1e6) + ' µs';
  if (a < 1) return n(v * 1000) + ' ms';
  if (a < 120) return n(v) + ' s';
  if (a < 7200) return n(v / 60) + ' min';
  return n(v / 3600) + ' h';
}

// seriesName is a series' legend name: the chart's name for its metric, then the labels the
// chart does not already fix (e.g. the state of queue.size, the source of index.lag).
function seriesName(s, spec) {
  const fixed = spec.labels || {};
  const parts = [];
  const name = (spec.names && spec.names[s.metric]) ?? s.metric;
  if (name) parts.push(name);
  for (const [k, v] of Object.entries(s.labels || {})) if (!(k in fixed)) parts.push(v);
  return parts.join(' ') || s.metric;
}

// seriesPath is the API path of a chart's series in a window.
function seriesPath(spec, win) {
  const q = new URLSearchParams();
  for (const m of spec.metrics) q.append('metric', m);
  q.set('window', win);
  for (const [k, v] of Object.entries(spec.labels || {})) q.set('label.' + k, v);
  return '/v1/stats/series?' + q.toString();
}

// xRange is the chart's time range: the window, or the history's span while it is shorter
// (from the first time any series has a value, at least chartMinSpan), so a fresh history
// fills the width instead of the last pixels of an empty window. The axis labels say the times.
// The charts of one section share the range (from the earliest first value among them), so
// their time axes line up. xSpan returns a panel's part: its last time and first time with a
// value (null: none); xRange combines the section's.
function xSpan(times, values) {
  const n = times.length;
  if (!n) return null;
  let first = null;
  for (let i = 0; i < n && first === null; i++) if (values.some((vs) => vs[i] !== null && vs[i] !== undefined)) first = times[i];
  return { first, last: times[n - 1] };
}

function xRange(panel) {
  const spans = panel.group.map((p) => p.span).filter(Boolean);
  if (!spans.length) return null;
  const hi = Math.max(...spans.map((x) => x.last));
  const firsts = spans.map((x) => x.first).filter((f) => f !== null);
  const first = firsts.length ? Math.min(...firsts) : hi;
  return [Math.min(first, hi - chartMinSpan), hi];
}

// lastIndex is the last time index at which some series has a value (-1: none).
function lastIndex(values, n) {
  for (let i = n - 1; i >= 0; i--) if (values.some((vs) => vs[i] !== null && vs[i] !== undefined)) return i;
  return -1;
}

// chartPanel renders one chart of spec: { key, title, unit, metrics: [names], labels: {label:
// value}, names: {metric: legend name}, dots: draw every value as a dot too }. The series of one chart share a unit (the first
// series', spec.unit until there is one).
// The figure carries what it draws for tests and scripts: data-window, data-last-time (unix
// seconds of its last point) and data-last (JSON [{metric, labels, value}] at that time).
function chartPanel(spec, group) {
  const box = el('div', { class: 'chart-plot', role: 'img', 'aria-label': spec.title });
  const note = el('p', { class: 'chart-note muted' });
  const fig = el('figure', { class: 'chart', 'data-chart': spec.key }, el('figcaption', { class: 'chart-title', text: spec.title }), box, note);
  const panel = { spec, fig, box, note, group: group || [], plot: null, shape: '', span: null, latest: -1, busy: false, away: 0, data: null, dataWindow: '', reads: 0 };
  panel.group.push(panel);
  fig.chartPanel = panel;
  // The chart follows its box's width: once the page is in the document, a resized window, a
  // rotated phone.
  panel.sizer = new ResizeObserver(() => fitPanel(panel));
  panel.sizer.observe(box);
  charts.panels.add(panel);
  refreshPanel(panel);
  ensureChartTimer();
  return fig;
}

// chartsSection renders a titled group of charts with the window picker.
function chartsSection(title, specs) {
  const group = []; // the section's panels share one time range
  return el('section', { class: 'charts' },
    el('div', { class: 'charts-head' }, el('h2', { text: title }), windowPicker()),
    el('div', { class: 'chart-grid' }, specs.map((spec) => chartPanel(spec, group))));
}

// windowPicker renders the 15 min / 1 h / 24 h buttons; a choice applies to every chart.
function windowPicker() {
  const labels = { '15m': '15 min', '1h': '1 h', '24h': '24 h' };
  return el('div', { class: 'chart-windows', role: 'group', 'aria-label': 'chart window' }, Object.keys(chartWindows).map((w) =>
    el('button', { type: 'button', 'data-window': w, 'aria-pressed': String(w === charts.window), onclick: () => setChartWindow(w) }, labels[w])));
}

// setChartWindow switches every chart to window w and redraws them now.
function setChartWindow(w) {
  if (!chartWindows[w] || w === charts.window) return;
  charts.window = w;
  localStorage.setItem(chartWindowKey, w);
  for (const b of document.querySelectorAll('.chart-windows button')) b.setAttribute('aria-pressed', String(b.dataset.window === w));
  for (const p of charts.panels) refreshPanel(p);
  restartChartTimer();
}

// chartFullEvery is how many refreshes read only the new points (?since=) between two reads of
// the whole window (which also picks up a series that appeared).
const chartFullEvery = 30;

// mergeSince appends an answer to ?since= (the points after the panel's last time) to the
// panel's data, keeping the window's number of points; null when the answer's series are not
// the panel's (then the whole window is read again).
function mergeSince(prev, inc) {
  const key = (s) => s.metric + JSON.stringify(s.labels || {});
  const ps = prev.series || [], is = inc.series || [];
  if (ps.length !== is.length || ps.some((s, i) => key(s) !== key(is[i]))) return null;
  const times = prev.times.concat(inc.times || []);
  const drop = Math.max(0, times.length - prev.times.length);
  return { ...inc, times: times.slice(drop), series: ps.map((s, i) => ({ ...s, values: s.values.concat(is[i].values).slice(drop) })) };
}

// refreshPanel reads the panel's series and draws them; a panel already reading is skipped.
// Between whole reads of the window it asks only for the points after its last one (?since=:
// one or two buckets instead of the window's 900, 360 or 1,440).
async function refreshPanel(panel) {
  if (panel.busy) return;
  panel.busy = true;
  const win = charts.window;
  try {
    const prev = panel.data;
    const whole = !prev || panel.dataWindow !== win || !prev.times.length || ++panel.reads % chartFullEvery === 0;
    let data = null;
    if (!whole) data = mergeSince(prev, await api('GET', seriesPath(panel.spec, win) + '&since=' + prev.times[prev.times.length - 1]));
    if (!data) data = await api('GET', seriesPath(panel.spec, win));
    if (charts.panels.has(panel) && win === charts.window) {
      panel.data = data;
      panel.dataWindow = win;
      drawPanel(panel, data);
    }
  } catch (e) {
    panel.note.textContent = 'no chart: ' + (e.code ? e.code + ': ' : '') + e.message;
    panel.fig.dataset.error = e.code || String(e.status || 'error');
  } finally { panel.busy = false; }
}

// drawPanel puts one answer of the series endpoint in the panel's chart: the chart is rebuilt
// when its series change, else only its data is replaced (uPlot keeps the hover state).
function drawPanel(panel, data) {
  let series = data.series || [];
  const times = data.times || [];
  const hidden = Math.max(0, series.length - chartMaxSeries);
  if (hidden) {
    const latest = (s) => { const i = lastIndex([s.values], times.length); return i < 0 ? 0 : s.values[i]; };
    series = [...series].sort((a, b) => latest(b) - latest(a)).slice(0, chartMaxSeries);
  }
  const values = series.map((s) => s.values);
  const unit = unitOf(series.length ? series[0].unit : panel.spec.unit);
  panel.span = xSpan(times, values);
  const last = lastIndex(values, times.length);
  const fig = panel.fig;
  fig.dataset.window = data.window || charts.window;
  fig.dataset.step = data.step || '';
  fig.dataset.lastTime = last < 0 ? '' : String(times[last]);
  fig.dataset.last = JSON.stringify(last < 0 ? [] : series.map((s) => ({ metric: s.metric, labels: s.labels || {}, value: s.values[last] })));
  delete fig.dataset.error;
  const notes = [];
  if (!series.length || last < 0) notes.push('no data in this window yet');
  if (hidden) notes.push(`${hidden} more series not drawn (the ${chartMaxSeries} largest shown)`);
  const range = xRange(panel);
  if (range && times.length && range[0] > times[0] && range[0] < range[1] - chartMinSpan) {
    notes.push('history starts ' + new Date(range[0] * 1000).toLocaleTimeString() + ': drawn from there');
  }
  panel.note.textContent = notes.join('; ');
  const shape = JSON.stringify([series.map((s) => seriesName(s, panel.spec)), unit.axis]);
  const columns = [times, ...values];
  if (panel.plot && panel.shape === shape) {
    panel.plot.setData(columns);
  } else {
    if (panel.plot) panel.plot.destroy();
    panel.box.replaceChildren();
    panel.shape = shape;
    panel.plot = newPlot(panel, series, unit, columns); // with no series yet: the axes alone
  }
  fig.dataset.points = String(times.length);
  panel.latest = last;
}

// showLatest puts the latest values in the legend while the mouse is not over the chart (uPlot
// clears it then); hooked to every draw and cursor move.
function showLatest(panel, u) {
  if (u.cursor.left < 0 && panel.latest >= 0) u.setLegend({ idx: panel.latest });
}

// newPlot builds the uPlot chart of a panel.
function newPlot(panel, series, unit, columns) {
  const width = Math.max(240, panel.box.clientWidth); // off-page (0): fitted once shown
  const opts = {
    width, height: 200,
    scales: {
      x: { time: true, range: (u, lo, hi) => xRange(panel) || [lo, hi] },
      // From 0 (or below, for a negative value) to the largest value, at least a floor (1, or
      // 10 ms for seconds), so a quiet series reads as a flat line at 0 on a readable axis.
      y: { range: (u, lo, hi) => uPlot.rangeNum(Math.min(0, lo ?? 0), Math.max(hi ?? 0, panel.spec.unit === 's' ? 0.01 : 1), 0.1, true) },
    },
    axes: [
      { stroke: '#67707d', grid: { stroke: '#eef1f4' }, ticks: { stroke: '#dde1e6' }, space: 80, values: timeLabels },
      { label: unit.axis, stroke: '#67707d', size: 64, grid: { stroke: '#eef1f4' }, ticks: { stroke: '#dde1e6' }, values: (u, splits) => splits.map(unit.fmt) },
    ],
    series: [
      { label: 'time', value: (u, v) => (v === null || v === undefined ? '–' : new Date(v * 1000).toLocaleTimeString()) },
      ...series.map((s, i) => ({
        label: seriesName(s, panel.spec), stroke: chartPalette[i % chartPalette.length], width: 1.5,
        // Quantiles exist only where something was observed: a lone value is drawn as a dot.
        points: panel.spec.dots ? { show: true, size: 5, fill: chartPalette[i % chartPalette.length] } : {},
        value: (u, v) => (v === null || v === undefined ? '–' : unit.fmt(v)),
      })),
    ],
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    legend: { live: true },
    hooks: { draw: [(u) => showLatest(panel, u)], setCursor: [(u) => showLatest(panel, u)] },
  };
  return new uPlot(opts, columns, panel.box);
}

// timeLabels are the time axis's labels, one line each in the browser's zone: hours, minutes
// and seconds over a range of 10 minutes or less, hours and minutes over longer ones (the
// legend gives the full time under the mouse).
function timeLabels(u, splits) {
  const short = u.scales.x.max - u.scales.x.min <= 600;
  const fmt = { hour: '2-digit', minute: '2-digit', ...(short ? { second: '2-digit' } : {}) };
  return splits.map((t) => new Date(t * 1000).toLocaleTimeString([], fmt));
}

// chartTick refreshes the charts on the page; panels no longer in the page (a page left) are
// dropped after two ticks (a page being re-rendered holds them off-page only briefly).
function chartTick() {
  if (document.visibilityState === 'hidden') return;
  for (const p of charts.panels) {
    if (!p.fig.isConnected) {
      if (++p.away >= 2) dropPanel(p);
      continue;
    }
    p.away = 0;
    refreshPanel(p);
  }
  if (!charts.panels.size) stopChartTimer();
}

// fitPanel sets the chart to the width of the panel's box.
function fitPanel(p) {
  if (!p.plot || !p.box.clientWidth) return;
  const w = Math.max(240, p.box.clientWidth);
  if (Math.abs(w - p.plot.width) > 2) p.plot.setSize({ width: w, height: 200 });
}

function dropPanel(p) {
  p.sizer.disconnect();
  if (p.plot) p.plot.destroy();
  charts.panels.delete(p);
}

function ensureChartTimer() {
  if (!charts.timer && document.visibilityState !== 'hidden') charts.timer = setInterval(chartTick, chartWindows[charts.window]);
}

function stopChartTimer() {
  clearInterval(charts.timer);
  charts.timer = null;
}

function restartChartTimer() {
  stopChartTimer();
  ensureChartTimer();
}

// A hidden tab polls nothing; shown again, the charts refresh at once.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') { stopChartTimer(); return; }
  if (charts.panels.size) { chartTick(); ensureChartTimer(); }
});

// ---- the charts of each page ----

// queueCharts are a queue's charts: jobs enqueued, done and failed per second, latency p50 and
// p99, and its jobs by state.
function queueCharts(name) {
  const labels = { queue: name };
  return chartsSection('Queue ' + name + ' over time', [
    { key: 'queue-rates', unit: '1/s', title: 'Jobs per second', metrics: ['queue.enqueued', 'queue.done', 'queue.failed'], labels,
      names: { 'queue.enqueued': 'enqueued', 'queue.done': 'done', 'queue.failed': 'failed' } },
    { key: 'queue-latency', dots: true, unit: 's', title: 'Job latency (enqueue to done)', metrics: ['queue.latency.p50', 'queue.latency.p99'], labels,
      names: { 'queue.latency.p50': 'p50', 'queue.latency.p99': 'p99' } },
    { key: 'queue-size', unit: 'count', title: 'Jobs by state', metrics: ['queue.size'], labels, names: { 'queue.size': '' } },
  ]);
}

// indexCharts are the index's charts: changes applied and stale per second and lag, per source.
function indexCharts() {
  return chartsSection('Index over time', [
    { key: 'index-rates', unit: '1/s', title: 'Changes per second', metrics: ['index.applied', 'index.stale'], names: { 'index.applied': 'applied', 'index.stale': 'stale' } },
    { key: 'index-lag', unit: 's', title: 'Lag per source', metrics: ['index.lag'], names: { 'index.lag': '' } },
    { key: 'index-backlog', unit: 'count', title: 'Backlog per Kafka partition and stream', metrics: ['index.backlog'], names: { 'index.backlog': '' } },
  ]);
}

// feedCharts are the feed's charts: items published per second, fan-out backlog, delivery lag.
function feedCharts() {
  return chartsSection('Feed over time', [
    { key: 'feed-published', unit: '1/s', title: 'Items published per second', metrics: ['feed.published'], names: { 'feed.published': 'published' } },
    { key: 'feed-backlog', unit: 'count', title: 'Fan-out backlog (jobs waiting)', metrics: ['feed.fanout_backlog'], names: { 'feed.fanout_backlog': 'backlog' } },
    { key: 'feed-lag', unit: 's', title: 'Delivery lag (publish to inboxes)', metrics: ['feed.delivery_lag'], names: { 'feed.delivery_lag': 'lag' } },
  ]);
}

// executorCharts are the executor's charts: tasks by state and stage durations p50 and p99.
function executorCharts() {
  return chartsSection('Executor over time', [
    { key: 'executor-tasks', unit: 'count', title: 'Tasks by state', metrics: ['executor.tasks'], names: { 'executor.tasks': '' } },
    { key: 'executor-stages', dots: true, unit: 's', title: 'Stage duration', metrics: ['executor.stage_duration.p50', 'executor.stage_duration.p99'],
      names: { 'executor.stage_duration.p50': 'p50', 'executor.stage_duration.p99': 'p99' } },
  ]);
}

// buildCharts is the build registry's chart: build events per minute.
function buildCharts() {
  return chartsSection('Builds over time', [
    { key: 'builds-events', unit: '1/min', title: 'Build events per minute', metrics: ['builds.events'], names: { 'builds.events': 'events' } },
  ]);
}
