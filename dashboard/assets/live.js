// redstate dashboard: the live stream. One EventSource per page on GET /v1/ui/events, naming
// the topics the page's sections watch; each "change" event makes those sections read their
// data again through the API. The stream is closed while the page is hidden (a background tab
// costs nothing) and opened again when it is shown, with the resume token of the last event,
// so the server announces only the topics that changed meanwhile.
'use strict';

const live = {
  // es is the open EventSource (null while hidden, or before the page subscribed).
  es: null,
  // handlers maps a topic to the functions to call when it changes.
  handlers: new Map(),
  // token is the last event's id: the versions this page was told about.
  token: '',
  // retry is the timer of a reconnection after the server refused the stream.
  retry: null,
  // page counts the pages rendered (reset); a handler of an earlier one is not registered.
  page: 0,

  // on calls fn on every change of topic, until the next reset; gen is the page (reset's
  // answer) that registers it.
  on(topic, fn, gen) {
    if (gen !== this.page) return;
    if (!this.handlers.has(topic)) this.handlers.set(topic, new Set());
    this.handlers.get(topic).add(fn);
  },

  // reset closes the stream and forgets the page's handlers (a new page subscribes anew); it
  // returns the new page's number.
  reset() {
    this.close();
    this.handlers.clear();
    return ++this.page;
  },

  // close closes the stream, keeping the handlers and the token.
  close() {
    clearTimeout(this.retry);
    this.retry = null;
    if (this.es) { this.es.close(); this.es = null; }
    document.body.dataset.live = 'closed';
  },

  // connect opens the stream for the registered topics (none: nothing to open). A hidden page
  // opens nothing; visibilitychange connects it when it is shown.
  connect() {
    this.close();
    if (this.handlers.size === 0 || document.visibilityState === 'hidden') return;
    const q = new URLSearchParams();
    for (const t of [...this.handlers.keys()].sort()) q.append('topic', t);
    if (this.token) q.set('since', this.token);
    const es = new EventSource('/v1/ui/events?' + q.toString());
    this.es = es;
    document.body.dataset.live = 'connecting';
    es.addEventListener('open', () => { document.body.dataset.live = 'open'; });
    es.addEventListener('change', (ev) => {
      if (ev.lastEventId) this.token = ev.lastEventId;
      let c = null;
      try { c = JSON.parse(ev.data); } catch (_) { return; }
      for (const fn of this.handlers.get(c.topic) || []) fn();
    });
    es.addEventListener('error', () => {
      // A dropped stream reconnects by itself (with Last-Event-ID); a refused one (429, 403,
      // a server restarting) is closed for good: open it again a little later.
      if (es.readyState === EventSource.CLOSED && this.es === es) {
        this.es = null;
        document.body.dataset.live = 'retrying';
        this.retry = setTimeout(() => this.connect(), 5000);
      }
    });
  },
};

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') live.close();
  else live.connect();
});
