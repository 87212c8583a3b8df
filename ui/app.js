/* SPDX-License-Identifier: MIT
 * hookd's web inspector (docs/ui.md): log in with an API token (a session
 * cookie), watch webhooks arrive over the live feed, page back through
 * history, filter, open one, act on it, and see refused deliveries.
 *
 * Everything a sender controls (sources, event types, headers, bodies) is
 * attacker-controlled: the DOM is built with createElement/textContent only,
 * attribute values are set with setAttribute on fixed names, and nothing is
 * ever parsed as HTML. The CSP (script-src 'self', style-src 'self') backs
 * this up.
 *
 * Memory: the list keeps at most ROW_CAP small summaries (never payloads) and
 * renders only the rows near the viewport, so 10,000 deliveries streaming
 * past leave the heap where it was; rows dropped off either end are paged in
 * again from the server when the user scrolls there. */
'use strict';
(function () {
  const ROW_CAP = 2000;          /* summaries kept in memory */
  const PAGE = 200;           /* rows per history page from GraphQL (no payloads) */
  const REST_PAGE = 100;      /* rows per page from the REST list (payloads included) */
  const OVERSCAN = 12;           /* rows rendered beyond the viewport on each side */
  const TEXT_CAP = 256 * 1024;   /* characters of a raw body shown before "show all" */
  const HEX_CAP = 64 * 1024;     /* bytes of a binary body in the hex view before "show all" */
  const KIDS_CAP = 500;          /* children of one JSON node rendered */
  const POLL_MS = 2500;          /* forwarding states of visible pending rows */
  const FKEYS = ['source', 'event', 'id', 'state', 'from', 'to'];
  const STATES = ['pending', 'delivered', 'failed', 'none'];

  const $ = (id) => document.getElementById(id);
  const list = $('list'), spacer = $('spacer'), detail = $('detail'), panes = $('panes');

  const S = {
    me: null,        /* {subject, kind, csrf, read, del, admin, exp} */
    f: {},           /* the filters, as in the URL */
    view: 'list',
    openId: 0,       /* the webhook in the detail pane */
    selId: 0,        /* the selected row */
    rows: [],        /* summaries, highest id first */
    hasOlder: false, /* the server has rows below the last one */
    loading: false,
    newerGap: false, /* rows above the first one were dropped (the user paged deep) */
    missed: 0,       /* live rows not shown while newerGap */
    after: 0,        /* the live feed resumes after this id */
    gen: 0,          /* bumped on every reset: answers for an older view are dropped */
    dgen: 0,         /* the same for the detail pane */
    sgen: 0,         /* the same for the session watch */
    es: null, esFails: 0, esTimer: 0,
    incoming: [], flushT: 0, rafT: 0,
    gqVerified: true, /* whether /graphql's Webhook has `verified` (asked once) */
    rh: 36,
    cur: null,       /* the row shown in the detail */
    blobUrl: '',
    timers: [],
    refusedSeq: 0, refused: [], refusedT: 0,
  };

  /* ---- DOM helpers: text only ---- */

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(p) {
    for (let i = 1; i < arguments.length; i++) {
      const k = arguments[i];
      if (k !== null && k !== undefined && k !== false) p.append(k);   /* strings become Text nodes */
    }
    return p;
  }
  function btn(label, onclick, cls, id) {
    const b = el('button', 'btn' + (cls ? ' ' + cls : ''), label);
    b.type = 'button';
    if (id) b.id = id;
    b.addEventListener('click', onclick);
    return b;
  }
  function pill(text, tone) { return el('span', 'pill' + (tone ? ' ' + tone : ''), text); }
  function kv(pairs) {
    const dl = el('dl', 'kv');
    for (const p of pairs) {
      if (!p) continue;
      const dd = el('dd');
      if (p[2]) dd.id = p[2];
      if (p[1] instanceof Node) dd.append(p[1]); else dd.textContent = p[1] === null || p[1] === undefined ? '—' : String(p[1]);
      add(dl, el('dt', null, p[0]), dd);
    }
    return dl;
  }
  const pad = (n, w) => String(n).padStart(w || 2, '0');
  function fmtTime(iso, long) {
    const d = new Date(iso);
    if (isNaN(d)) return String(iso);
    const t = pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    const day = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
    if (long) return day + ' ' + t + '.' + pad(d.getMilliseconds(), 3);
    const now = new Date();
    return d.toDateString() === now.toDateString() ? t : day.slice(5) + ' ' + t.slice(0, 5);
  }
  function fmtBytes(n) {
    if (n === null || n === undefined) return '—';
    const exact = n.toLocaleString('en') + ' bytes';
    if (n < 1024) return exact;
    const u = n < 1048576 ? [1024, 'KiB'] : [1048576, 'MiB'];
    return (n / u[0]).toFixed(1) + ' ' + u[1] + ' (' + exact + ')';
  }
  function isoToLocal(iso) {
    const d = new Date(iso);
    if (!iso || isNaN(d)) return '';
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }
  /* GraphQL's DateTime: RFC 3339 in UTC, whole seconds. */
  function normIso(v) {
    const d = new Date(v);
    return !v || isNaN(d) ? '' : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  /* ---- HTTP ---- */

  class HttpError extends Error {
    constructor(status, body) {
      super((body && (body.detail || body.title)) || (status ? 'HTTP ' + status : 'hookd is not reachable'));
      this.status = status;
      this.reason = body && body.reason;
    }
  }

  /* One request to hookd. The cookie rides by itself; state-changing
   * requests carry the CSRF token. A 401 means the session is gone. */
  async function call(method, path, opt) {
    opt = opt || {};
    const headers = Object.assign({}, opt.headers);
    if (method !== 'GET' && method !== 'HEAD' && S.me && S.me.csrf) headers['X-CSRF-Token'] = S.me.csrf;
    let body = opt.body;
    if (body !== undefined && typeof body !== 'string') {
      body = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    }
    let r;
    try {
      r = await fetch(path, { method, headers, body, credentials: 'same-origin', cache: 'no-store' });
    } catch (e) {
      throw new HttpError(0, null);
    }
    if (r.ok) {
      if (opt.raw) return r;
      return /json/.test(r.headers.get('content-type') || '') ? r.json() : null;
    }
    let problem = null;
    try { problem = await r.json(); } catch (e) { problem = null; }
    if (r.status === 401 && !opt.noLogout) sessionGone(problem && problem.reason);
    throw new HttpError(r.status, problem);
  }

  async function gql(query, variables) {
    const r = await call('POST', '/graphql', { body: { query, variables: variables || {} }, headers: { Accept: 'application/json' } });
    if (r && r.errors && r.errors.length) throw new HttpError(400, { detail: r.errors[0].message });
    return r.data;
  }

  /* ---- URL: the filters, the view and the open webhook ---- */

  function readUrl() {
    const q = new URLSearchParams(location.search);
    S.f = {};
    for (const k of FKEYS) {
      let v = (q.get(k) || '').trim();
      if (k === 'from' || k === 'to') v = normIso(v);
      if (k === 'state' && STATES.indexOf(v) < 0) v = '';
      if (v) S.f[k] = v;
    }
    S.view = q.get('view') === 'refused' ? 'refused' : 'list';
    const o = q.get('open');
    S.openId = o && /^[1-9]\d{0,17}$/.test(o) ? +o : 0;
  }
  function writeUrl(push) {
    const q = new URLSearchParams();
    for (const k of FKEYS) if (S.f[k]) q.set(k, S.f[k]);
    if (S.view === 'refused') q.set('view', 'refused');
    if (S.openId && S.view === 'list') q.set('open', String(S.openId));
    const s = q.toString();
    const url = location.pathname + (s ? '?' + s : '');
    if (url !== location.pathname + location.search) history[push ? 'pushState' : 'replaceState'](null, '', url);
  }
  function fillFilters() {
    $('f-source').value = S.f.source || '';
    $('f-event').value = S.f.event || '';
    $('f-id').value = S.f.id || '';
    $('f-state').value = S.f.state || '';
    $('f-from').value = isoToLocal(S.f.from);
    $('f-to').value = isoToLocal(S.f.to);
    const n = FKEYS.filter((k) => S.f[k]).length;
    $('f-toggle').textContent = n ? 'Filters (' + n + ' on)' : 'Filters';
  }
  const sameFilters = (a, b) => FKEYS.every((k) => (a[k] || '') === (b[k] || ''));

  /* ---- session ---- */

  function setMe(me) {
    const sc = String(me.scope || '').split(',');
    const admin = sc.indexOf('admin') >= 0, del = admin || sc.indexOf('delete') >= 0;
    S.me = {
      subject: me.subject || '', kind: me.kind || 'session', csrf: me.csrfToken || null,
      admin, del, read: del || sc.indexOf('read') >= 0, exp: me.expiresAt ? Date.parse(me.expiresAt) : 0,
    };
  }

  async function restore() {
    try {
      setMe(await call('GET', '/api/sessions/current', { noLogout: true }));
    } catch (e) {
      showLogin(e.status === 401 || e.status === 403 ? '' : 'Could not reach hookd: ' + e.message + '.');
      return;
    }
    startApp();
  }

  function showLogin(message, info) {
    $('app').hidden = true;
    $('refused').hidden = true;
    $('tabs').hidden = true;
    $('live').hidden = true;
    $('who').hidden = true;
    $('logout').hidden = true;
    $('login').hidden = false;
    const m = $('login-msg');
    m.textContent = message || '';
    m.className = 'msg' + (info ? ' info' : '');
    $('token').focus();
  }

  /* Any 401: the session expired, was ended or its token revoked. Back to
   * the login form; the URL (the filters) stays as it is. */
  function sessionGone(reason) {
    if (!S.me) return;
    /* The browser drops the cookie at its Max-Age: then hookd sees none. */
    const expired = reason === 'expired' || (S.me.exp && Date.now() >= S.me.exp - 2000);
    stopAll();
    const why = expired ? 'Your session expired.' :
      reason === 'revoked' ? 'The token behind this session was revoked.' : 'Your session has ended.';
    showLogin(why + ' Sign in again: the filters are kept.');
  }

  function stopAll() {
    S.me = null;
    S.gen++;
    S.sgen++;
    S.dgen++;
    stopStream();
    for (const t of S.timers) clearTimeout(t);
    S.timers = [];
    clearTimeout(S.refusedT);
    S.rows = [];
    S.incoming = [];
    S.cur = null;
    clearRendered();
    detail.hidden = true;
    panes.classList.remove('open');
    detail.replaceChildren();
    $('refused-list').replaceChildren();
    S.refused = [];
    S.refusedSeq = 0;
  }

  async function login(ev) {
    ev.preventDefault();
    const input = $('token'), b = $('login-btn'), m = $('login-msg');
    const token = input.value.trim();
    input.value = '';
    m.className = 'msg';
    if (!/^hkd_[A-Za-z0-9_-]{43}$/.test(token)) {
      m.textContent = 'That is not an API token: they start with hkd_ and have 47 characters.';
      return;
    }
    b.disabled = true;
    m.textContent = '';
    try {
      const r = await fetch('/api/sessions', {
        method: 'POST', headers: { Authorization: 'Bearer ' + token }, credentials: 'same-origin', cache: 'no-store',
      });
      if (r.status !== 201) {
        let p = null;
        try { p = await r.json(); } catch (e) { p = null; }
        const reason = p && p.reason ? ' (' + p.reason + ')' : '';
        m.textContent = r.status === 401 ? 'hookd did not accept this token' + reason + '.' :
          r.status === 429 ? 'Too many failed attempts: try again in ' + (r.headers.get('Retry-After') || 'a few') + ' s.' :
            'Sign-in failed: ' + ((p && p.detail) || 'HTTP ' + r.status) + '.';
        return;
      }
      setMe(await call('GET', '/api/sessions/current', { noLogout: true }));
      startApp();
    } catch (e) {
      m.textContent = 'Sign-in failed: ' + e.message + '.';
    } finally {
      b.disabled = false;
    }
  }

  async function logout() {
    try {
      await call('DELETE', '/api/sessions/current', { noLogout: true });
    } catch (e) {
      /* Gone already, or hookd down: either way this page forgets it. */
    }
    stopAll();
    showLogin('Signed out.', true);
  }

  function checkSession() {
    return call('GET', '/api/sessions/current').then((me) => { setMe(me); return true; }, (e) => e.status !== 401);
  }

  function later(fn, ms) {
    const t = setTimeout(() => { S.timers.splice(S.timers.indexOf(t), 1); fn(); }, ms);
    S.timers.push(t);
  }

  /* Expiry: ask again just after the session's end (the live feed would
   * otherwise keep going on a connection opened while it was valid), and
   * every minute for revocations. */
  function watchSession() {
    const g = ++S.sgen;
    const tick = () => {
      if (g !== S.sgen || !S.me) return;
      checkSession().then(() => { if (g === S.sgen && S.me) later(tick, nextCheck()); });
    };
    const nextCheck = () => Math.max(1000, Math.min(60000, S.me && S.me.exp ? S.me.exp - Date.now() + 300 : 60000));
    later(tick, nextCheck());
  }

  function startApp() {
    $('login').hidden = true;
    $('tabs').hidden = false;
    $('live').hidden = false;
    const who = $('who');
    who.hidden = !S.me.subject;
    who.textContent = S.me.subject;
    $('logout').hidden = S.me.kind !== 'session';
    S.rh = parseFloat(getComputedStyle(document.documentElement).getPropertyValue('--rh')) || 36;
    readUrl();
    fillFilters();
    S.gen++;
    watchSession();
    showView(false);
    resetList();
    if (S.openId && S.view === 'list') openDetail(S.openId, false);
  }

  /* ---- the list ---- */

  /* What a row of the list keeps: no payload, no headers. */
  function summary(w) {
    const v = w.verified;
    return {
      id: +w.id, src: String(w.source), ev: String(w.eventType), at: String(w.receivedAt), ing: !!w.ingress,
      ver: !w.ingress ? 'envelope' : v === undefined ? '' : v ? String(v.scheme) : 'none',
      st: w.delivery ? String(w.delivery.state).toLowerCase() : 'none', v: 0, fresh: false,
    };
  }

  function indexOf(id) {
    let lo = 0, hi = S.rows.length - 1;
    while (lo <= hi) {
      const m = (lo + hi) >> 1, v = S.rows[m].id;
      if (v === id) return m;
      if (v > id) lo = m + 1; else hi = m - 1;
    }
    return -1;
  }

  /* GraphQL cursors are base64url("v1:<id>") (docs/graphql.md): a page
   * below any row, also one that came from the live feed. */
  const cursorOf = (id) => btoa('v1:' + id).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');

  function listQuery() {
    return 'query($n:Int,$c:String,$s:String,$e:String,$d:String,$a:DateTime,$b:DateTime,$st:DeliveryState)' +
      '{webhooks(first:$n,after:$c,source:$s,eventType:$e,deliveryId:$d,receivedAfter:$a,receivedBefore:$b,' +
      'delivery:$st){edges{node{id source eventType receivedAt ingress' + (S.gqVerified ? ' verified{scheme}' : '') +
      ' delivery{state}}}pageInfo{hasNextPage}}top:webhooks(first:1){edges{node{id}}}}';
  }

  /* One page of history below `last` (0: the newest): {rows, more, top}.
   * The REST list filters by source, event type, delivery id and state and
   * shows each row's verification; a time range is GraphQL's (the REST list
   * has none), where Webhook has no `verified` field (yet): those rows show
   * their verification once opened. */
  async function fetchPage(last) {
    if (S.f.from || S.f.to) {
      const vars = {
        n: PAGE, c: last ? cursorOf(last) : null, s: S.f.source || null, e: S.f.event || null, d: S.f.id || null,
        a: S.f.from || null, b: S.f.to || null, st: S.f.state ? S.f.state.toUpperCase() : null,
      };
      let data;
      try {
        data = await gql(listQuery(), vars);
      } catch (e) {
        if (!S.gqVerified || e.status !== 400 || !/verified/.test(e.message)) throw e;
        S.gqVerified = false;
        data = await gql(listQuery(), vars);
      }
      const top = data.top.edges.length ? +data.top.edges[0].node.id : 0;
      return { rows: data.webhooks.edges.map((e) => summary(e.node)), more: data.webhooks.pageInfo.hasNextPage, top };
    }
    const q = new URLSearchParams({ limit: String(REST_PAGE) });
    if (last) q.set('before', String(last));
    if (S.f.source) q.set('source', S.f.source);
    if (S.f.event) q.set('eventType', S.f.event);
    if (S.f.id) q.set('deliveryId', S.f.id);
    if (S.f.state) q.set('delivery', S.f.state);
    const rows = (await call('GET', '/api/webhooks?' + q.toString())).map(summary);
    let top = rows.length ? rows[0].id : 0;
    if (!last && !rows.length) {
      const any = await call('GET', '/api/webhooks?limit=1');
      top = any.length ? +any[0].id : 0;
    }
    return { rows, more: rows.length === REST_PAGE, top };
  }

  /* A page of history below the last row, or the newest page. */
  async function loadPage(first) {
    if (S.loading) return;
    const g = S.gen;
    S.loading = true;
    setStatus();
    let page;
    try {
      page = await fetchPage(first || !S.rows.length ? 0 : S.rows[S.rows.length - 1].id);
    } catch (e) {
      if (g !== S.gen) return;
      S.loading = false;
      setStatus('Could not load: ' + e.message);
      return;
    }
    if (g !== S.gen) return;
    S.loading = false;
    const floor = S.rows.length ? S.rows[S.rows.length - 1].id : Infinity;
    for (const r of page.rows) if (r.id < floor) S.rows.push(r);
    S.hasOlder = page.more;
    if (first) {
      /* Resume the feed after the newest row we have; with none, a little
       * below the newest row anywhere (a row committed between the two
       * reads is then replayed, not lost; duplicates are dropped by id). */
      S.after = S.rows.length ? S.rows[0].id : Math.max(0, page.top - 50);
    }
    if (S.rows.length > ROW_CAP) {
      const k = S.rows.length - ROW_CAP;
      S.rows.splice(0, k);
      S.newerGap = true;
      list.scrollTop = Math.max(0, list.scrollTop - k * S.rh);
    }
    render();
    setStatus();
    if (first) startStream();
  }

  function resetList() {
    S.gen++;
    stopStream();
    S.rows = [];
    S.hasOlder = false;
    S.loading = false;
    S.newerGap = false;
    S.missed = 0;
    S.incoming = [];
    clearRendered();
    list.scrollTop = 0;
    render();
    loadPage(true);
    pollStates();
  }

  const rendered = new Map();   /* id -> element, the rows near the viewport */
  function clearRendered() {
    for (const e of rendered.values()) e.remove();
    rendered.clear();
  }

  function verCell(r) {
    const c = el('span', 'c-ver');
    if (r.ver === 'envelope') c.append(pill('envelope'));
    else if (r.ver === 'none') c.append(pill('unsigned', 'warn'));
    else if (r.ver) c.append(pill('✓ ' + r.ver, 'ok'));
    else c.append(pill('delivery'));
    return c;
  }
  function stCell(st) {
    const c = el('span', 'c-st');
    c.append(st === 'none' ? pill('—') : pill(st, st === 'delivered' ? 'ok' : st === 'failed' ? 'bad' : 'warn'));
    return c;
  }

  function rowEl(r) {
    const e = el('div', 'row' + (r.fresh ? ' fresh' : ''));
    r.fresh = false;
    e.id = 'r' + r.id;
    e.setAttribute('role', 'option');
    e.dataset.id = String(r.id);
    const t = el('span', 'c-time', fmtTime(r.at));
    t.setAttribute('title', r.at);
    const src = el('span', 'c-src', r.src);
    src.setAttribute('title', r.src);
    const ev = el('span', 'c-ev', r.ev || '(none)');
    ev.setAttribute('title', r.ev);
    add(e, t, src, ev, verCell(r), stCell(r.st), el('span', 'c-id', '#' + r.id));
    e._v = r.v;
    return e;
  }

  function scheduleRender() {
    if (!S.rafT) S.rafT = requestAnimationFrame(render);
  }

  /* Only the rows near the viewport exist in the DOM. */
  function render() {
    if (S.rafT) cancelAnimationFrame(S.rafT);
    S.rafT = 0;
    const n = S.rows.length, rh = S.rh;
    spacer.style.height = n * rh + 'px';
    const top = list.scrollTop, h = list.clientHeight || 600;
    const a = Math.max(0, Math.floor(top / rh) - OVERSCAN), b = Math.min(n, Math.ceil((top + h) / rh) + OVERSCAN);
    const want = new Set();
    for (let i = a; i < b; i++) {
      const r = S.rows[i];
      want.add(r.id);
      let e = rendered.get(r.id);
      if (e && e._v !== r.v) {
        e.remove();
        e = null;
      }
      if (!e) {
        e = rowEl(r);
        rendered.set(r.id, e);
        spacer.append(e);
      }
      e.style.transform = 'translateY(' + i * rh + 'px)';
      const sel = r.id === S.selId ? 'true' : 'false';
      if (e.getAttribute('aria-selected') !== sel) e.setAttribute('aria-selected', sel);
    }
    for (const [id, e] of rendered) {
      if (!want.has(id)) {
        e.remove();
        rendered.delete(id);
      }
    }
    if (rendered.has(S.selId)) list.setAttribute('aria-activedescendant', 'r' + S.selId);
    else list.removeAttribute('aria-activedescendant');
    const banner = $('banner');
    banner.hidden = !S.newerGap;
    if (S.newerGap) banner.textContent = (S.missed ? S.missed + ' newer not shown' : 'Newer rows not shown') + ' — back to the newest';
    if (S.hasOlder && !S.loading && b >= n - OVERSCAN) loadPage(false);
  }

  function setStatus(text) {
    const s = $('list-status');
    if (text) { s.textContent = text; return; }
    const n = S.rows.length;
    s.textContent = S.loading ? 'Loading…' :
      n === 0 ? (S.f.source || S.f.event || S.f.id || S.f.state || S.f.from || S.f.to ?
        'No webhook matches these filters yet.' : 'No webhooks yet: they appear here as they arrive.') :
        n.toLocaleString('en') + ' loaded' + (S.hasOlder ? ' · scroll for older' : ' · that is all');
  }

  /* ---- the live feed ---- */

  function setLive(cls, text) {
    const l = $('live');
    l.className = 'live ' + cls;
    l.textContent = text;
  }

  function stopStream() {
    if (S.es) {
      S.es.onmessage = S.es.onerror = S.es.onopen = null;
      S.es.close();
      S.es = null;
    }
    clearTimeout(S.esTimer);
    clearTimeout(S.flushT);
    S.flushT = 0;
  }

  function startStream() {
    stopStream();
    if (!S.me) return;
    if (S.f.to && Date.parse(S.f.to) < Date.now()) {
      setLive('', 'Not live: the range ends in the past');
      return;
    }
    const q = new URLSearchParams();
    if (S.f.source) q.set('source', S.f.source);
    if (S.f.event) q.set('eventType', S.f.event);
    if (S.f.id) q.set('deliveryId', S.f.id);
    if (S.f.state) q.set('delivery', S.f.state);
    q.set('after', String(S.after));
    const g = S.gen;
    const es = new EventSource('/api/webhooks/stream?' + q.toString());
    S.es = es;
    setLive('', 'Connecting…');
    es.onopen = () => {
      S.esFails = 0;
      setLive('on', 'Live');
    };
    es.onmessage = (ev) => {
      if (g !== S.gen) return;
      let w;
      try { w = JSON.parse(ev.data); } catch (e) { return; }
      const r = summary(w);
      if (r.id > S.after) S.after = r.id;
      S.incoming.push(r);
      if (!S.flushT) S.flushT = setTimeout(flush, 15);
    };
    es.onerror = () => {
      if (g !== S.gen) return;
      setLive('off', 'Reconnecting…');
      if (es.readyState !== EventSource.CLOSED) return;   /* the browser retries by itself */
      /* Closed for good (an HTTP error): a 401 means the session is gone;
       * anything else, try again later from the last id seen. */
      stopStream();
      checkSession().then((ok) => {
        if (!ok || g !== S.gen || !S.me) return;
        S.esFails++;
        S.esTimer = setTimeout(startStream, Math.min(30000, 1000 * 2 ** Math.min(S.esFails, 5)));
      });
    };
  }

  function passTime(r) {
    const t = Date.parse(r.at);
    return !(S.f.to && t > Date.parse(S.f.to)) && !(S.f.from && t < Date.parse(S.f.from));
  }

  /* New rows go on top, at most every frame or so; a user who scrolled down
   * keeps looking at the same rows. */
  function flush() {
    S.flushT = 0;
    const inc = S.incoming;
    S.incoming = [];
    const head = S.rows.length ? S.rows[0].id : 0;
    const fresh = [];
    for (let i = inc.length - 1; i >= 0; i--) {
      const r = inc[i];
      if (r.id > head && passTime(r) && (!fresh.length || r.id < fresh[fresh.length - 1].id)) {
        r.fresh = true;
        fresh.push(r);
      }
    }
    if (!fresh.length) return;
    if (S.newerGap) {
      S.missed += fresh.length;
      render();
      return;
    }
    const keep = list.scrollTop > 1;
    S.rows = fresh.length > ROW_CAP ? fresh.slice(0, ROW_CAP) : fresh.concat(S.rows);
    if (S.rows.length > ROW_CAP) {
      S.rows.length = ROW_CAP;
      S.hasOlder = true;
    }
    if (keep) list.scrollTop += fresh.length * S.rh;
    render();
    setStatus();
  }

  /* Forwarding states change after a row arrives: the visible pending rows
   * are asked again every few seconds (one GraphQL request, aliased). */
  function pollStates() {
    const g = S.gen;
    later(async () => {
      if (g !== S.gen || !S.me) return;
      const ids = [];
      for (const e of rendered.values()) {
        const i = indexOf(+e.dataset.id);
        if (i >= 0 && S.rows[i].st === 'pending' && ids.length < 40) ids.push(S.rows[i].id);
      }
      if (ids.length && S.view === 'list' && !document.hidden) {
        try {
          const q = '{' + ids.map((id, k) => 'w' + k + ':webhook(id:"' + id + '"){id delivery{state}}').join(' ') + '}';
          const data = await gql(q);
          if (g !== S.gen) return;
          for (const k in data) {
            const w = data[k];
            if (!w) continue;
            const i = indexOf(+w.id), st = w.delivery ? String(w.delivery.state).toLowerCase() : 'none';
            if (i >= 0 && S.rows[i].st !== st) {
              S.rows[i].st = st;
              S.rows[i].v++;
            }
          }
          render();
        } catch (e) {
          /* The next round asks again; a 401 has logged out already. */
        }
      }
      if (S.cur && S.cur.delivery && S.cur.delivery.state === 'pending' && S.view === 'list') refreshDetail();
      pollStates();
    }, POLL_MS);
  }

  function removeRow(id) {
    const i = indexOf(id);
    if (i < 0) return;
    S.rows.splice(i, 1);
    const e = rendered.get(id);
    if (e) {
      e.remove();
      rendered.delete(id);
    }
    if (S.selId === id) S.selId = S.rows.length ? S.rows[Math.min(i, S.rows.length - 1)].id : 0;
    render();
    setStatus();
  }

  /* ---- selection and keyboard ---- */

  function select(i, scroll) {
    if (!S.rows.length) return;
    i = Math.max(0, Math.min(S.rows.length - 1, i));
    S.selId = S.rows[i].id;
    if (scroll) {
      const y = i * S.rh;
      if (y < list.scrollTop) list.scrollTop = y;
      else if (y + S.rh > list.scrollTop + list.clientHeight) list.scrollTop = y + S.rh - list.clientHeight;
    }
    render();
  }

  let followT = 0;
  function move(d) {
    const i = indexOf(S.selId);
    select(i < 0 ? 0 : i + d, true);
    if (document.activeElement !== list && !detail.contains(document.activeElement)) list.focus();
    /* An open detail follows the selection. */
    if (S.openId) {
      clearTimeout(followT);
      followT = setTimeout(() => { if (S.selId && S.selId !== S.openId) openDetail(S.selId, false); }, 120);
    }
  }

  function onKey(ev) {
    if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey || !S.me) return;
    if (document.querySelector('dialog[open]')) return;
    const t = ev.target;
    const typing = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
    if (ev.key === 'Escape') {
      if (typing) t.blur();
      else if (S.openId && S.view === 'list') closeDetail();
      else return;
      ev.preventDefault();
      return;
    }
    if (typing || S.view !== 'list') return;
    const inDetail = detail.contains(t);
    switch (ev.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'ArrowDown': if (inDetail) return; move(1); break;
      case 'ArrowUp': if (inDetail) return; move(-1); break;
      case 'PageDown': if (t !== list) return; move(Math.max(1, Math.floor(list.clientHeight / S.rh) - 1)); break;
      case 'PageUp': if (t !== list) return; move(-Math.max(1, Math.floor(list.clientHeight / S.rh) - 1)); break;
      case 'Home': if (t !== list) return; select(0, true); break;
      case 'End': if (t !== list) return; select(S.rows.length - 1, true); break;
      case 'Enter':
        if (t !== list && t !== document.body) return;
        if (!S.selId && S.rows.length) S.selId = S.rows[0].id;
        if (S.selId) openDetail(S.selId, true);
        break;
      case '/': $('f-source').focus(); break;
      default: return;
    }
    ev.preventDefault();
  }

  /* ---- the detail ---- */

  function closeDetail() {
    S.dgen++;
    S.openId = 0;
    S.cur = null;
    detail.hidden = true;
    detail.replaceChildren();
    panes.classList.remove('open');
    if (S.blobUrl) URL.revokeObjectURL(S.blobUrl);
    S.blobUrl = '';
    writeUrl(false);
    const i = indexOf(S.selId);
    if (i >= 0) select(i, true);
    list.focus();
  }

  async function openDetail(id, focus) {
    const g = ++S.dgen;
    S.openId = id;
    S.selId = id;
    writeUrl(false);
    render();
    detail.hidden = false;
    panes.classList.add('open');
    detail.replaceChildren(el('p', 'empty', 'Loading #' + id + '…'));
    if (focus) detail.focus();
    let w;
    try {
      w = await call('GET', '/api/webhooks/' + id);
    } catch (e) {
      if (g !== S.dgen) return;
      detail.replaceChildren(closeBar(), el('p', 'empty', e.status === 404 ?
        'Webhook #' + id + ' is not there (deleted, or removed by retention).' : 'Could not load #' + id + ': ' + e.message));
      return;
    }
    if (g !== S.dgen) return;
    S.cur = w;
    syncRow(w);
    drawDetail(w, g);
    if (focus) detail.focus();
  }

  /* The list row follows what the detail learned. */
  function syncRow(w) {
    const i = indexOf(+w.id);
    if (i < 0) return;
    const s = summary(w), r = S.rows[i];
    if (r.st !== s.st || r.ver !== s.ver) {
      r.st = s.st;
      r.ver = s.ver;
      r.v++;
      render();
    }
  }

  async function refreshDetail() {
    const g = S.dgen, cur = S.cur;
    if (!cur) return;
    try {
      const w = await call('GET', '/api/webhooks/' + cur.id);
      if (g !== S.dgen) return;
      S.cur = w;
      syncRow(w);
      const box = $('d-fwd');
      if (box) box.replaceChildren(forwarding(w));
    } catch (e) {
      /* Shown when the user acts; a 401 has logged out already. */
    }
  }

  function closeBar() {
    const b = btn('✕ Close', closeDetail, 'quiet', 'd-close');
    b.setAttribute('aria-label', 'Close the detail (Esc)');
    return b;
  }

  function say(text, bad) {
    const m = $('d-msg');
    if (!m) return;
    m.className = 'msg' + (bad ? '' : ' info');
    m.textContent = text;
  }

  function forwarding(w) {
    const d = w.delivery;
    if (!d) return kv([['State', 'not forwarded (stored while forwarding was off)', 'd-state']]);
    const st = String(d.state);
    return kv([
      ['State', pill(st, st === 'delivered' ? 'ok' : st === 'failed' ? 'bad' : st === 'pending' ? 'warn' : ''), 'd-state'],
      ['Attempts', d.attempts, 'd-attempts'],
      ['Last status', d.lastStatus, 'd-last-status'],
      ['Last error', d.lastError, 'd-last-error'],
      d.nextAttemptAt ? ['Next attempt', fmtTime(d.nextAttemptAt, true)] : null,
      d.lastAttemptAt ? ['Last attempt', fmtTime(d.lastAttemptAt, true)] : null,
    ]);
  }

  function drawDetail(w, g) {
    const head = el('div', 'dhead');
    const h2 = el('h2', null, w.source);
    h2.id = 'd-title';
    h2.append(el('span', 'sub', (w.eventType || '(no event type)') + ' · #' + w.id));
    add(head, h2, closeBar());

    const acts = el('div', 'actions');
    if (S.me.admin) acts.append(btn('Redeliver', (e) => redeliver(w, e.currentTarget), '', 'a-redeliver'));
    if (S.me.del) acts.append(btn('Delete…', () => askDelete(w), 'danger', 'a-delete'));
    acts.append(btn('Copy as curl', () => showCurl(w), '', 'a-curl'));
    if (S.blobUrl) URL.revokeObjectURL(S.blobUrl);
    S.blobUrl = '';
    if (w.ingress || w.payload !== null) {
      const a = el('a', 'btn', 'Download body');
      a.id = 'a-download';
      if (w.ingress) {
        a.setAttribute('href', '/api/webhooks/' + (+w.id) + '/body?download=1');
      } else {
        S.blobUrl = URL.createObjectURL(new Blob([w.payload], { type: 'application/octet-stream' }));
        a.setAttribute('href', S.blobUrl);
      }
      a.setAttribute('download', 'webhook-' + (+w.id) + (w.ingress ? '' : '.json'));
      acts.append(a);
    }
    const msg = el('p', 'msg info');
    msg.id = 'd-msg';
    msg.setAttribute('role', 'status');

    const payloadBytes = w.ingress ? null : w.payload === null ? 0 : new TextEncoder().encode(w.payload).length;
    const sha = el('span', 'mono', w.ingress ? w.bodySha256 : 'computing…');
    const overview = kv([
      ['Received', fmtTime(w.receivedAt, true) + ' (' + w.receivedAt + ')', 'd-received'],
      ['Kind', w.ingress ? 'delivery to POST /hooks/' + w.source : 'envelope, POST /api/webhooks', 'd-kind'],
      w.ingress ? ['Content-Type', w.contentType, 'd-ctype'] : null,
      ['Size', fmtBytes(w.ingress ? w.bodyBytes : payloadBytes) + (w.ingress ? '' : ' of payload'), 'd-size'],
      [w.ingress ? 'SHA-256' : 'SHA-256 (payload)', sha, 'd-sha256'],
      w.ingress ? ['Client', w.clientAddress, 'd-client'] : null,
    ]);
    if (!w.ingress) {
      if (w.payload === null) sha.textContent = '— (no payload)';
      else if (window.crypto && crypto.subtle) {
        crypto.subtle.digest('SHA-256', new TextEncoder().encode(w.payload)).then((h) => {
          if (g === S.dgen) sha.textContent = Array.from(new Uint8Array(h), (b) => b.toString(16).padStart(2, '0')).join('');
        }, () => { sha.textContent = '—'; });
      } else sha.textContent = '— (needs a secure context)';
    }

    const v = w.verified;
    const verification = !w.ingress ? kv([
      ['Scheme', 'none recorded', 'd-scheme'],
      ['Result', 'accepted', 'd-result'],
      ['Reason', 'an envelope post: its signature (X-Hub-Signature-256, when hookd has a secret) is checked on arrival and not kept', 'd-reason'],
    ]) : v ? kv([
      ['Scheme', v.scheme, 'd-scheme'],
      ['Result', pill('✓ verified', 'ok'), 'd-result'],
      ['Reason', 'a signature matched the secret below', 'd-reason'],
      ['Secret', v.secret, 'd-secret'],
    ]) : kv([
      ['Scheme', 'none', 'd-scheme'],
      ['Result', pill('not verified', 'warn'), 'd-result'],
      ['Reason', 'the source\'s scheme is "none": hookd checks no signature for it', 'd-reason'],
    ]);

    const dedup = kv([
      ['Delivery id', w.ingress ? (w.deliveryId === null ? 'none: every post is stored' : w.deliveryId) : 'none (envelope)', 'd-delivery-id'],
      ['Duplicates', w.ingress && w.deliveryId !== null ?
        'a repeat of this id from ' + w.source + ' is answered 200 {"duplicate":true} with this row\'s id and not stored' :
        'not deduplicated', 'd-dups'],
    ]);

    const fwd = el('div');
    fwd.id = 'd-fwd';
    fwd.append(forwarding(w));

    let headers;
    const hs = w.ingress && w.headers ? Object.keys(w.headers) : [];
    if (hs.length) {
      headers = el('table', 'hdrs');
      headers.id = 'd-headers';
      const tb = el('tbody');
      for (const k of hs) {
        const tr = el('tr');
        add(tr, el('td', 'mono', k), el('td', 'mono', w.headers[k]));
        tb.append(tr);
      }
      headers.append(tb);
    } else {
      headers = el('p', 'hint', w.ingress ? 'none kept' : 'Envelope posts keep no headers: only source, event type and payload.');
    }

    const body = el('div');
    body.id = 'd-body';
    detail.replaceChildren(head, acts, msg,
      el('h3', null, 'Request'), overview,
      el('h3', null, 'Verification'), verification,
      el('h3', null, 'Deduplication'), dedup,
      el('h3', null, 'Forwarding'), fwd,
      el('h3', null, 'Headers'), headers,
      el('h3', null, 'Body'), body);
    drawBody(body, w, g);
  }

  const JSON_CT = /^\s*(application\/([\w.+-]*\+)?json|text\/json)\b/i;

  async function drawBody(box, w, g) {
    if (!w.ingress) {
      if (w.payload === null) box.append(el('p', 'hint', 'no payload (null)'));
      else showText(box, w.payload, true);
      return;
    }
    if (w.payload !== null) {
      showText(box, w.payload, JSON_CT.test(w.contentType || ''));
      return;
    }
    if (!w.bodyBytes) {
      box.append(el('p', 'hint', 'empty body'));
      return;
    }
    /* Not UTF-8 text by its Content-Type or its bytes: fetch the raw bytes. */
    box.append(el('p', 'hint', 'Loading the raw body…'));
    let bytes;
    try {
      const r = await call('GET', '/api/webhooks/' + (+w.id) + '/body', { raw: true });
      bytes = new Uint8Array(await r.arrayBuffer());
    } catch (e) {
      if (g === S.dgen) box.replaceChildren(el('p', 'msg', 'Could not load the body: ' + e.message));
      return;
    }
    if (g !== S.dgen) return;
    box.replaceChildren();
    const text = utf8Text(bytes);
    if (text !== null) showText(box, text, false, 'Shown as text: valid UTF-8, though the Content-Type is not a text type.');
    else showHex(box, bytes);
  }

  /* The bytes as text when they are UTF-8 without control characters. */
  function utf8Text(bytes) {
    try {
      const t = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      return /[\x00-\x08\x0e-\x1f\x7f]/.test(t) ? null : t;
    } catch (e) {
      return null;
    }
  }

  function showText(box, text, tryJson, note) {
    let parsed, isJson = false;
    const c = text.trimStart().charAt(0);
    if (tryJson || c === '{' || c === '[') {
      try {
        parsed = JSON.parse(text);
        isJson = parsed !== null && typeof parsed === 'object';
      } catch (e) {
        isJson = false;
      }
    }
    const bar = el('div', 'bodybar');
    const out = el('div');
    box.append(bar, out);
    if (note) bar.append(el('span', 'note', note));
    const raw = () => {
      const pre = el('pre', 'body', text.length > TEXT_CAP ? text.slice(0, TEXT_CAP) : text);
      pre.id = 'd-raw';
      out.replaceChildren(pre);
      if (text.length > TEXT_CAP) {
        out.append(btn('Show all ' + text.length.toLocaleString('en') + ' characters', (e) => {
          pre.textContent = text;
          e.currentTarget.remove();
        }, 'quiet'));
      }
    };
    if (!isJson) {
      raw();
      return;
    }
    const pretty = () => {
      const t = el('div', 'tree');
      t.id = 'd-tree';
      t.append(jsonNode(null, parsed, 0, { open: 300 }));
      out.replaceChildren(t);
    };
    const toggle = btn('Raw', () => {
      const toRaw = toggle.textContent === 'Raw';
      toggle.textContent = toRaw ? 'Pretty' : 'Raw';
      toggle.setAttribute('aria-pressed', String(toRaw));
      if (toRaw) raw(); else pretty();
    }, 'quiet', 'd-rawtoggle');
    toggle.setAttribute('aria-pressed', 'false');
    bar.prepend(el('span', 'note', 'JSON'), toggle);
    pretty();
  }

  /* A JSON value as nested <details>: collapsible, keyboard-operable;
   * children are built when a node is first opened. */
  function jsonNode(key, v, depth, budget) {
    if (v !== null && typeof v === 'object') {
      const arr = Array.isArray(v), keys = arr ? null : Object.keys(v), n = arr ? v.length : keys.length;
      const d = el('details'), s = el('summary');
      if (key !== null) add(s, el('span', 'k', key), ': ');
      s.append(el('span', 'meta', arr ? '[' + n + (n === 1 ? ' item]' : ' items]') : '{' + n + (n === 1 ? ' key}' : ' keys}')));
      d.append(s);
      let filled = false;
      const fill = () => {
        if (filled) return;
        filled = true;
        const kids = el('div', 'kids'), lim = Math.min(n, KIDS_CAP);
        for (let i = 0; i < lim; i++) kids.append(arr ? jsonNode(String(i), v[i], depth + 1, budget) : jsonNode(JSON.stringify(keys[i]), v[keys[i]], depth + 1, budget));
        if (n > lim) kids.append(el('div', 'leaf meta', '… ' + (n - lim) + ' more: see Raw'));
        d.append(kids);
      };
      d.addEventListener('toggle', () => { if (d.open) fill(); });
      /* Small documents open whole; large ones show their top levels. */
      if (depth < 5 && n <= 100 && (budget.open -= n) >= 0) {
        fill();
        d.open = true;
      }
      return d;
    }
    const leaf = el('div', 'leaf');
    if (key !== null) add(leaf, el('span', 'k', key), ': ');
    let s = JSON.stringify(v);
    if (s.length > 20000) s = s.slice(0, 20000) + '… (see Raw)';
    leaf.append(el('span', typeof v === 'string' ? 's' : typeof v === 'number' ? 'n' : 'l', s));
    return leaf;
  }

  function hexDump(b, max) {
    const H = '0123456789abcdef', n = Math.min(b.length, max), out = [];
    for (let o = 0; o < n; o += 16) {
      let hex = '', asc = '';
      for (let i = 0; i < 16; i++) {
        if (o + i < n) {
          const c = b[o + i];
          hex += H[c >> 4] + H[c & 15] + ' ';
          asc += c >= 32 && c < 127 ? String.fromCharCode(c) : '.';
        } else hex += '   ';
        if (i === 7) hex += ' ';
      }
      out.push(o.toString(16).padStart(8, '0') + '  ' + hex + ' |' + asc + '|');
    }
    return out.join('\n');
  }

  function showHex(box, bytes) {
    const bar = el('div', 'bodybar');
    bar.append(el('span', 'note', 'Binary (not UTF-8 text): hex dump'));
    const pre = el('pre', 'body hex', hexDump(bytes, HEX_CAP));
    pre.id = 'd-hex';
    box.append(bar, pre);
    if (bytes.length > HEX_CAP) {
      box.append(btn('Show all ' + bytes.length.toLocaleString('en') + ' bytes', (e) => {
        pre.textContent = hexDump(bytes, bytes.length);
        e.currentTarget.remove();
      }, 'quiet'));
    }
  }

  /* ---- actions ---- */

  async function redeliver(w, b) {
    b.disabled = true;
    say('Redelivering…');
    try {
      await call('POST', '/api/webhooks/' + (+w.id) + '/redeliver');
      say('Queued for redelivery: the forwarding state below follows it.');
      setTimeout(refreshDetail, 300);
    } catch (e) {
      say(e.status === 403 ? 'Redeliver needs the admin scope.' : e.status === 404 ? 'It is gone.' : 'Redeliver failed: ' + e.message, true);
    } finally {
      b.disabled = false;
    }
  }

  function askDelete(w) {
    const dlg = $('confirm');
    $('confirm-title').textContent = 'Delete webhook #' + w.id + '?';
    $('confirm-text').textContent = 'From "' + w.source + '", ' + (w.eventType || 'no event type') + ', received ' +
      fmtTime(w.receivedAt, true) + '. This cannot be undone.';
    dlg.returnValue = '';
    const done = async () => {
      dlg.removeEventListener('close', done);
      if (dlg.returnValue !== 'ok') return;
      try {
        await call('DELETE', '/api/webhooks/' + (+w.id));
      } catch (e) {
        if (e.status !== 404) {
          say(e.status === 403 ? 'Delete needs the delete scope.' : 'Delete failed: ' + e.message, true);
          return;
        }
      }
      removeRow(+w.id);
      if (S.openId === +w.id) closeDetail();
      setStatus('Deleted #' + w.id + '.');
    };
    dlg.addEventListener('close', done);
    dlg.showModal();
    $('confirm-cancel').focus();
  }

  /* A word for POSIX sh, single-quoted (NUL cannot be an argument). */
  const sq = (s) => "'" + String(s).replace(/\0/g, '').replace(/'/g, "'\\''") + "'";
  /* Bytes as a printf format: printable ASCII as is, the rest octal. */
  function printfFormat(b) {
    const out = [];
    for (let i = 0; i < b.length; i++) {
      const c = b[i];
      out.push(c === 37 ? '%%' : c === 92 ? '\\\\' : c >= 32 && c < 127 && c !== 39 ? String.fromCharCode(c) :
        '\\' + c.toString(8).padStart(3, '0'));
    }
    return out.join('');
  }
  const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

  /* The original request: method, path, kept headers, body. The body goes
   * through stdin (never as a curl argument: one starting with @ would make
   * curl read a local file). */
  async function showCurl(w) {
    say('');
    let bytes;
    try {
      if (w.ingress) {
        bytes = w.bodyBytes ? new Uint8Array(await (await call('GET', '/api/webhooks/' + (+w.id) + '/body', { raw: true })).arrayBuffer()) :
          new Uint8Array(0);
      } else {
        bytes = new TextEncoder().encode(JSON.stringify({ source: w.source, eventType: w.eventType, payload: w.payload }));
      }
    } catch (e) {
      say('Could not read the body: ' + e.message, true);
      return;
    }
    const url = location.origin + (w.ingress ? '/hooks/' + encodeURIComponent(w.source) : '/api/webhooks');
    const args = ['curl', '-sS', '-X', 'POST', sq(url)];
    const hdrs = w.ingress ? Object.keys(w.headers || {}).map((k) => [k, w.headers[k]]) : [['content-type', 'application/json']];
    let ctype = false;
    for (const [k, v] of hdrs) {
      if (!TOKEN.test(k) || /[\r\n\0]/.test(v) || /^(host|content-length|transfer-encoding|connection|expect)$/i.test(k)) continue;
      if (/^content-type$/i.test(k)) ctype = true;
      args.push('-H', sq(k + ': ' + v));
    }
    if (!ctype) args.push('-H', sq('Content-Type:'));   /* none was sent: keep curl from adding its own */
    args.push('--data-binary', '@-');
    const text = utf8Text(bytes);
    const cmd = (text !== null ? "printf '%s' " + sq(text) : "printf '" + printfFormat(bytes) + "'") + ' | ' + args.join(' ');
    const ta = $('curl-text');
    ta.value = cmd;
    $('curl-note').textContent = w.ingress ?
      'Replays the delivery byte for byte, with the headers hookd kept (signature included). A provider delivery id makes hookd answer it as a duplicate.' :
      'Posts the same envelope again (a new row).';
    $('curl-msg').textContent = '';
    $('curl').showModal();
    ta.focus();
    ta.select();
    copyCurl();
  }

  async function copyCurl() {
    const ta = $('curl-text'), m = $('curl-msg');
    try {
      await navigator.clipboard.writeText(ta.value);
      m.textContent = 'Copied.';
    } catch (e) {
      ta.select();
      m.textContent = 'Selected: press Ctrl+C (Cmd+C) to copy.';
    }
  }

  /* ---- refused deliveries ---- */

  function refusedItem(x) {
    const it = el('div', 'ritem');
    it.setAttribute('role', 'listitem');
    it.dataset.seq = String(x.seq);
    const top = el('div', 'rtop');
    const t = el('span', 'c-time', fmtTime(x.receivedAt, true));
    t.setAttribute('title', String(x.receivedAt));
    add(top, t, el('b', 'r-src', x.source + (x.sourceKnown ? '' : ' (unknown source)')),
      pill(x.status + ' ' + x.reason, 'bad'), x.scheme ? pill(x.scheme) : null);
    const body = x.bodyRead ? fmtBytes(x.bodyBytes) : (x.bodyBytes === null ? 'not read' : fmtBytes(x.bodyBytes) + ' announced, not read');
    const facts = kv([
      ['Event type', x.eventType], ['Delivery id', x.deliveryId], ['Content-Type', x.contentType], ['Body', body],
      x.bodySha256 ? ['SHA-256', x.bodySha256] : null,
      x.skewSeconds !== undefined ? ['Clock skew', x.skewSeconds + ' s'] : null,
      ['Client', x.clientAddress],
    ]);
    const hd = el('details');
    hd.append(el('summary', null, 'Headers' + (x.headersTruncated ? ' (truncated)' : '')));
    const table = el('table', 'hdrs'), tb = el('tbody');
    for (const k of Object.keys(x.headers || {})) {
      const tr = el('tr');
      add(tr, el('td', 'mono', k), el('td', 'mono', x.headers[k]));
      tb.append(tr);
    }
    table.append(tb);
    hd.append(table);
    add(it, top, el('p', 'rdetail', x.detail), facts, hd);
    return it;
  }

  async function pollRefused(first) {
    clearTimeout(S.refusedT);
    if (!S.me || S.view !== 'refused') return;
    const g = S.gen;
    const q = new URLSearchParams();
    if (S.f.source) q.set('source', S.f.source);
    q.set('limit', first ? '100' : '256');
    if (!first) q.set('after', String(S.refusedSeq));
    try {
      const got = await call('GET', '/api/ingress/refusals?' + q.toString());
      if (g !== S.gen || S.view !== 'refused') return;
      const box = $('refused-list');
      if (first) box.replaceChildren();
      for (let i = got.length - 1; i >= 0; i--) {
        const x = got[i];
        if (x.seq <= S.refusedSeq) continue;
        S.refusedSeq = x.seq;
        box.prepend(refusedItem(x));
      }
      while (box.childElementCount > 256) box.lastElementChild.remove();
      $('refused-status').textContent = box.childElementCount ? '' : 'No refused deliveries' + (S.f.source ? ' from ' + S.f.source : '') + ' since hookd started.';
    } catch (e) {
      if (g !== S.gen) return;
      $('refused-status').textContent = e.status === 404 ? 'This hookd does not report refusals.' : 'Could not load: ' + e.message;
    }
    S.refusedT = setTimeout(pollRefused, POLL_MS);
  }

  /* ---- views ---- */

  function showView(push) {
    const ref = S.view === 'refused';
    $('app').hidden = ref;
    $('refused').hidden = !ref;
    $('tab-list').setAttribute('aria-pressed', String(!ref));
    $('tab-refused').setAttribute('aria-pressed', String(ref));
    writeUrl(push);
    if (ref) {
      S.refusedSeq = 0;
      pollRefused(true);
    } else {
      clearTimeout(S.refusedT);
      render();
    }
  }

  function applyFilters(ev) {
    ev.preventDefault();
    const f = {
      source: $('f-source').value.trim(), event: $('f-event').value.trim(), id: $('f-id').value.trim(),
      state: $('f-state').value, from: normIso($('f-from').value), to: normIso($('f-to').value),
    };
    for (const k of FKEYS) if (!f[k]) delete f[k];
    if (f.from && f.to && Date.parse(f.from) > Date.parse(f.to)) {
      setStatus('"From" is after "To".');
      return;
    }
    S.f = f;
    writeUrl(true);
    fillFilters();
    resetList();
  }

  function onPopState() {
    if (!S.me) {
      readUrl();
      return;
    }
    const old = S.f, oldView = S.view, oldOpen = S.openId;
    readUrl();
    fillFilters();
    if (!sameFilters(old, S.f)) resetList();
    if (oldView !== S.view) showView(false);
    if (S.openId && S.openId !== oldOpen) openDetail(S.openId, false);
    else if (!S.openId && oldOpen) closeDetail();
  }

  function init() {
    readUrl();
    $('login-form').addEventListener('submit', login);
    $('logout').addEventListener('click', logout);
    $('filters').addEventListener('submit', applyFilters);
    $('f-clear').addEventListener('click', () => {
      S.f = {};
      fillFilters();
      writeUrl(true);
      resetList();
    });
    $('tab-list').addEventListener('click', () => { S.view = 'list'; showView(true); });
    $('tab-refused').addEventListener('click', () => { S.view = 'refused'; showView(true); });
    $('banner').addEventListener('click', () => resetList());
    $('curl-copy').addEventListener('click', copyCurl);
    $('f-toggle').addEventListener('click', (e) => {
      const on = $('filters').classList.toggle('show');
      e.currentTarget.setAttribute('aria-expanded', String(on));
    });
    list.addEventListener('scroll', scheduleRender, { passive: true });
    spacer.addEventListener('click', (ev) => {
      const r = ev.target.closest('.row');
      if (r) openDetail(+r.dataset.id, false);
    });
    list.addEventListener('focus', () => { if (!S.selId && S.rows.length) select(0, false); });
    document.addEventListener('keydown', onKey);
    window.addEventListener('popstate', onPopState);
    const onWidth = () => {
      const first = Math.floor(list.scrollTop / S.rh);
      S.rh = parseFloat(getComputedStyle(document.documentElement).getPropertyValue('--rh')) || 36;
      clearRendered();
      list.scrollTop = first * S.rh;
      render();
    };
    matchMedia('(max-width: 640px)').addEventListener('change', onWidth);
    window.addEventListener('resize', scheduleRender);
    restore();
  }

  init();
})();
