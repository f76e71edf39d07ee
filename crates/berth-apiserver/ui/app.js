// berth's live cluster page: lists and watches nodes through the ordinary
// API; takes every pod as a short row (/ui/api/pods) and then follows the
// pods' ordinary watch; counts down to the evictions the server computes
// (/ui/api/evictions, berth-core's rule); shows the zones' disruption
// states and rates (/ui/api/zones, berth-core's rule again); and draws
// only the node rows in view, the node rows as soon as the nodes are in
// and their pods as those arrive, so 5,000 nodes and 150,000 pods stay
// responsive. Zoomed out ("zones"), each zone is one row of counts. No
// build step.
'use strict';
(function () {
  const ROW_H = 26;
  const HOUR = 3600e3;
  const S = {
    token: null,
    nodes: new Map(),      // name -> node
    pods: new Map(),       // ns/name -> pod (trimmed)
    byNode: new Map(),     // node name -> Set of pod keys
    pending: new Set(),    // keys of pods with no node
    evictions: new Map(),  // ns/name -> eviction row
    offset: 0,             // server clock minus ours, ms
    events: [],            // {t, kind, label} of the last hour
    rows: [],              // the flat list: {zone} or {node}
    zoneStates: new Map(), // zone -> {state, evictionQps, notReady, nodes} (server)
    zoomedOut: false,      // one row per zone, with its counts
    collapsed: new Set(),  // zones folded to their row
    dirty: true, rowsDirty: true,
    podsLoaded: false,
    marks: {},             // performance.now() of: nodesPainted, podsPainted
    applied: 0,            // watch events applied (tests and the benchmark read it)
  };
  window.berthUi = S;

  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const key = (o) => (o.metadata.namespace || '') + '/' + o.metadata.name;
  // As the server names zones (berth-core's zone key, read as
  // region/zone): so the zone states match the groups.
  const zoneOf = (n) => {
    const l = n.metadata.labels || {};
    const zone = l['topology.kubernetes.io/zone'] || l['failure-domain.beta.kubernetes.io/zone'] || '';
    const region = l['topology.kubernetes.io/region'] || l['failure-domain.beta.kubernetes.io/region'] || '';
    return !zone && !region ? '(none)' : region ? region + '/' + zone : zone;
  };
  const ready = (n) => { const c = ((n.status || {}).conditions || []).find((c) => c.type === 'Ready'); return c ? c.status : 'Unknown'; };
  const taints = (n) => (n.spec || {}).taints || [];
  const taintText = (t) => t.key + (t.value ? '=' + t.value : '') + ':' + t.effect;
  const setStatus = (s) => { $('status').textContent = s; document.body.dataset.state = s; };

  async function api(path, init) {
    const res = await fetch(path, Object.assign({ headers: { Authorization: 'Bearer ' + S.token, Accept: 'application/json' } }, init || {}));
    if (res.status === 401 || res.status === 403) { sessionStorage.removeItem('berth-token'); throw Object.assign(new Error('the token was refused'), { auth: true }); }
    if (!res.ok && !init) throw new Error(path + ': ' + res.status);
    return res;
  }

  // Only what the page shows is kept of a pod: 150,000 of them fit. The
  // same record from a watched pod and from a /ui/api/pods row.
  function trimPod(p) {
    const spec = p.spec || {}, st = p.status || {};
    const sched = (st.conditions || []).find((c) => c.type === 'PodScheduled');
    const owner = ((p.metadata.ownerReferences || []).find((o) => o.controller) || {});
    return { key: key(p), name: p.metadata.name, node: spec.nodeName || '', phase: st.phase || 'Pending',
      owner: owner.kind ? owner.kind + '/' + owner.name : '', deleting: !!p.metadata.deletionTimestamp,
      reason: sched && sched.status === 'False' ? (sched.reason || '') + ': ' + (sched.message || '') : '' };
  }
  // A row of /ui/api/pods: [namespace, name, node, phase, owner, deleting, reason].
  function rowPod(r) {
    return { key: r[0] + '/' + r[1], name: r[1], node: r[2], phase: r[3] || 'Pending', owner: r[4], deleting: r[5], reason: r[6] };
  }

  function event(kind, label, t) {
    S.events.push({ t: t || Date.now() + S.offset, kind, label });
    const cut = Date.now() + S.offset - HOUR;
    while (S.events.length && S.events[0].t < cut) S.events.shift();
  }

  function putNode(n, initial) {
    const old = S.nodes.get(n.metadata.name);
    S.nodes.set(n.metadata.name, n);
    if (!old || zoneOf(old) !== zoneOf(n)) S.rowsDirty = true;
    const was = old ? ready(old) : 'True', now = ready(n);
    if (!initial && (!old || was !== now || zoneOf(old) !== zoneOf(n))) refreshZones();
    if (now !== 'True' && (was === 'True' || initial)) {
      const c = ((n.status || {}).conditions || []).find((c) => c.type === 'Ready');
      const at = c && c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : undefined;
      event('notready', n.metadata.name + ' ' + now, initial ? at : undefined);
    }
    const before = new Set(old ? taints(old).map(taintText) : []);
    for (const t of taints(n)) {
      if (!before.has(taintText(t))) event('taint', n.metadata.name + ' ' + taintText(t), initial && t.timeAdded ? Date.parse(t.timeAdded) : undefined);
    }
    if (!initial && JSON.stringify(old ? taints(old) : []) !== JSON.stringify(taints(n))) refreshEvictions();
  }

  function dropNode(name) { S.nodes.delete(name); S.rowsDirty = true; refreshZones(); }

  function putPod(p) { putTrimmed(trimPod(p)); }
  function putTrimmed(t) {
    const old = S.pods.get(t.key);
    if (old) unindex(old);
    S.pods.set(t.key, t);
    if (t.node) { let s = S.byNode.get(t.node); if (!s) S.byNode.set(t.node, (s = new Set())); s.add(t.key); }
    else if (t.phase === 'Pending') S.pending.add(t.key);
    if (t.node && S.tainted && S.tainted.has(t.node)) refreshEvictions();
  }
  function unindex(t) { const s = S.byNode.get(t.node); if (s) s.delete(t.key); S.pending.delete(t.key); }
  function dropPod(p) {
    const k = key(p), old = S.pods.get(k);
    if (old) unindex(old);
    S.pods.delete(k);
    if (S.evictions.has(k)) { event('evicted', k); S.evictions.delete(k); }
  }

  // The zones' states and tainting rates, by berth-core's rule on the
  // server: asked again (at most every 50 ms) when a node's Ready or zone
  // changes.
  let zoneTimer = null;
  function refreshZones() {
    if (zoneTimer) return;
    zoneTimer = setTimeout(async () => {
      zoneTimer = null;
      try {
        const body = await (await api('/ui/api/zones')).json();
        S.zoneStates = new Map(body.zones.map((z) => [z.zone, z]));
        S.zoneRates = body.rates;
        S.dirty = true;
      } catch (e) { setStatus('zones: ' + e.message); }
    }, 50);
  }

  // The server's due times: asked again (at most every 50 ms) when taints
  // or the pods on tainted nodes change.
  let evTimer = null;
  function refreshEvictions() {
    if (evTimer) return;
    evTimer = setTimeout(async () => {
      evTimer = null;
      try {
        const asked = Date.now();
        const body = await (await api('/ui/api/evictions')).json();
        S.offset = Date.parse(body.now) - (asked + Date.now()) / 2;
        S.evictions = new Map(body.evictions.filter((e) => S.pods.has(e.namespace + '/' + e.name)).map((e) => [e.namespace + '/' + e.name, Object.assign(e, { dueMs: Date.parse(e.due) })]));
        S.tainted = new Set(body.evictions.map((e) => e.node));
        for (const n of S.nodes.values()) if (taints(n).some((t) => t.effect === 'NoExecute')) S.tainted.add(n.metadata.name);
        S.dirty = true;
      } catch (e) { setStatus('evictions: ' + e.message); }
    }, 50);
  }

  async function listObjects(path) {
    const body = await (await api(path)).json();
    return { items: body.items, rv: body.metadata.resourceVersion };
  }
  async function listPodRows() {
    const body = await (await api('/ui/api/pods')).json();
    return { items: body.rows, rv: body.resourceVersion };
  }

  // A watch from `rv`, its events applied as they come; on its end or a
  // 410 the whole list starts over.
  async function watch(path, rv, apply) {
    const res = await api(path + (path.includes('?') ? '&' : '?') + 'watch=1&allowWatchBookmarks=true&resourceVersion=' + rv);
    const reader = res.body.getReader(), dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return rv;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i); buf = buf.slice(i + 1);
        if (!line.trim()) continue;
        const ev = JSON.parse(line);
        if (ev.type === 'ERROR') throw Object.assign(new Error(ev.object.message), { gone: ev.object.code === 410 });
        rv = ev.object.metadata.resourceVersion;
        if (ev.type !== 'BOOKMARK') { apply(ev.type, ev.object); S.applied++; S.dirty = true; }
      }
    }
  }

  // `list` answers {items, rv}; the watch of `path` goes on from rv.
  async function follow(path, list, load, apply) {
    for (;;) {
      let rv;
      try {
        const body = await list();
        load(body.items);
        rv = body.rv;
        S.dirty = true; S.rowsDirty = true;
        for (;;) rv = await watch(path, rv, apply);
      } catch (e) {
        if (e.auth) { showLogin(e.message); return; }
        setStatus('reconnecting: ' + e.message);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  // Zoomed out (or a zone folded by a click on its row), a zone is its
  // one row of counts.
  function buildRows() {
    const zones = new Map();
    for (const n of S.nodes.values()) { const z = zoneOf(n); if (!zones.has(z)) zones.set(z, []); zones.get(z).push(n.metadata.name); }
    S.rows = [];
    for (const z of [...zones.keys()].sort()) {
      S.rows.push({ zone: z });
      if (S.zoomedOut || S.collapsed.has(z)) continue;
      for (const name of zones.get(z).sort()) S.rows.push({ node: name });
    }
    S.zones = zones;
    $('nodes-spacer').style.height = S.rows.length * ROW_H + 'px';
    S.rowsDirty = false;
  }

  // Each zone's counts, O(nodes): what a zone row and the zones panel say.
  function zoneCounts() {
    const counts = new Map();
    for (const [zone, names] of S.zones || new Map()) {
      const c = { nodes: names.length, ready: 0, notReady: 0, cordoned: 0, tainted: 0, pods: 0, leaving: 0 };
      for (const name of names) {
        const n = S.nodes.get(name); if (!n) continue;
        if (ready(n) === 'True') c.ready++; else c.notReady++;
        if ((n.spec || {}).unschedulable) c.cordoned++;
        if (taints(n).length) c.tainted++;
        const pods = S.byNode.get(name); if (pods) c.pods += pods.size;
      }
      counts.set(zone, c);
    }
    for (const e of S.evictions.values()) {
      const n = S.nodes.get(e.node); const c = n && counts.get(zoneOf(n)); if (c) c.leaving++;
    }
    return counts;
  }

  const num = (x) => x.toLocaleString('en');
  function stateBadge(zone) {
    const z = S.zoneStates.get(zone);
    if (!z) return '<span class="badge zstate">state …</span>';
    return `<span class="badge zstate state-${esc(z.state)}" title="--unhealthy-zone-threshold ${S.zoneRates ? S.zoneRates.unhealthyZoneThreshold : ''}">${esc(z.state)}</span>`
      + `<span class="zqps" title="the node lifecycle controller taints this zone's unhealthy nodes at this rate">${z.evictionQps} nodes/s</span>`;
  }
  function zoneRow(zone, c) {
    const open = !(S.zoomedOut || S.collapsed.has(zone));
    return `<span class="fold">${open ? '▾' : '▸'}</span><span class="zname">zone ${esc(zone)}</span>${stateBadge(zone)}`
      + `<span class="zc" data-count="nodes">${num(c.nodes)} nodes</span>`
      + `<span class="zc ready-count" data-count="ready">${num(c.ready)} Ready</span>`
      + `<span class="zc notready-count" data-count="notReady">${num(c.notReady)} not Ready</span>`
      + `<span class="zc" data-count="cordoned">${num(c.cordoned)} cordoned</span>`
      + `<span class="zc" data-count="tainted">${num(c.tainted)} tainted</span>`
      + `<span class="zc" data-count="pods">${S.podsLoaded ? num(c.pods) : '…'} pods</span>`
      + `<span class="zc" data-count="leaving">${num(c.leaving)} leaving</span>`;
  }

  function countdown(e) {
    const left = Math.max(0, e.dueMs - (Date.now() + S.offset));
    return (left / 1000).toFixed(1) + 's';
  }

  function nodeRow(name) {
    const n = S.nodes.get(name); if (!n) return '';
    const r = ready(n);
    let h = `<span class="name" title="${esc(name)}">${esc(name)}</span><span class="badge ready-${esc(r)}">${r === 'True' ? 'Ready' : r === 'False' ? 'NotReady' : 'Unknown'}</span>`;
    if ((n.spec || {}).unschedulable) h += '<span class="badge cordon">cordoned</span>';
    for (const t of taints(n)) h += `<span class="chip ${esc(t.effect)}" title="${esc(taintText(t))}${t.timeAdded ? ' since ' + esc(t.timeAdded) : ''}">${esc(taintText(t))}</span>`;
    for (const c of (n.status || {}).conditions || []) if (c.type !== 'Ready' && c.status !== 'False') h += `<span class="badge cond" title="${esc(c.message || '')}">${esc(c.type)}=${esc(c.status)}</span>`;
    const keys = S.byNode.get(name) || new Set();
    const leaving = [], others = [];
    for (const k of keys) (S.evictions.has(k) ? leaving : others).push(k);
    let pods = S.podsLoaded ? `<span class="count">${keys.size} pods</span> ` : '<span class="count loading">pods loading</span> ';
    for (const k of leaving) { const p = S.pods.get(k); pods += `<span class="pod leaving" data-pod="${esc(k)}" title="${esc(p.owner)}">${esc(p.name)} in <span class="cd" data-pod="${esc(k)}">${countdown(S.evictions.get(k))}</span></span>`; }
    for (const k of others.slice(0, 12)) { const p = S.pods.get(k); pods += `<span class="pod phase-${esc(p.phase)}" data-pod="${esc(k)}" title="${esc(p.owner || 'no owner')} ${esc(p.phase)}">${esc(p.name)}</span>`; }
    return h + `<span class="pods">${pods}</span>`;
  }

  function renderNodes() {
    const box = $('nodes');
    const first = Math.max(0, Math.floor(box.scrollTop / ROW_H) - 2);
    const last = Math.min(S.rows.length, first + Math.ceil(box.clientHeight / ROW_H) + 4);
    let h = '';
    for (let i = first; i < last; i++) {
      const row = S.rows[i], top = i * ROW_H;
      if (row.zone !== undefined) {
        const c = S.counts.get(row.zone);
        if (c) h += `<div class="row zone" data-zone="${esc(row.zone)}" style="top:${top}px">${zoneRow(row.zone, c)}</div>`;
      } else {
        h += `<div class="row node" data-node="${esc(row.node)}" style="top:${top}px">${nodeRow(row.node)}</div>`;
      }
    }
    const spacer = $('nodes-spacer');
    box.innerHTML = ''; box.appendChild(spacer);
    box.insertAdjacentHTML('beforeend', h);
  }

  function renderPanels() {
    let notReady = 0;
    for (const c of S.counts.values()) notReady += c.notReady;
    $('summary').textContent = `${num(S.nodes.size)} nodes (${num(notReady)} not Ready), ${S.podsLoaded ? num(S.pods.size) : '…'} pods, ${num(S.pending.size)} pending, ${num(S.evictions.size)} evictions due`;
    $('node-count').textContent = `(${S.nodes.size})`;
    const evs = [...S.evictions.values()].sort((a, b) => a.dueMs - b.dueMs).slice(0, 200);
    $('evictions').innerHTML = evs.length ? evs.map((e) => { const k = e.namespace + '/' + e.name; return `<div class="ev" data-pod="${esc(k)}"><span class="countdown cd" data-pod="${esc(k)}">${countdown(e)}</span><span>${esc(k)} on ${esc(e.node)}</span><span class="why">taint ${esc(e.taint)}, toleration ${esc(e.toleration)}</span></div>`; }).join('') : '<p>None.</p>';
    let z = '';
    for (const [zone, c] of [...S.counts.entries()].sort()) z += `<div class="zone-line" data-zone="${esc(zone)}">${zoneRow(zone, c)}</div>`;
    const r = S.zoneRates;
    if (r) z += `<p class="why rates">Rates: ${r.nodeEvictionRate} nodes/s when Normal or FullDisruption (--node-eviction-rate); when more than 2 and ${Math.round(r.unhealthyZoneThreshold * 100)}% of a zone's nodes are not Ready (PartialDisruption), ${r.secondaryNodeEvictionRate} nodes/s in zones over ${r.largeClusterSizeThreshold} nodes, else none; none anywhere when every zone is down.</p>`;
    $('zones').innerHTML = z;
    const pend = [...S.pending].slice(0, 100).map((k) => S.pods.get(k));
    $('pending').innerHTML = pend.length ? pend.map((p) => `<div class="pend" data-pod="${esc(p.key)}">${esc(p.key)} <span class="why">${esc(p.reason || 'not scheduled yet')}</span></div>`).join('') + (S.pending.size > 100 ? `<p>and ${S.pending.size - 100} more</p>` : '') : '<p>None.</p>';
  }

  function renderTimeline() {
    const c = $('timeline'), w = c.clientWidth; if (!w) return;
    if (c.width !== w) c.width = w;
    const g = c.getContext('2d'), now = Date.now() + S.offset;
    g.clearRect(0, 0, w, c.height);
    g.fillStyle = '#f4f6f9'; g.fillRect(0, 0, w, c.height);
    g.fillStyle = '#666'; g.font = '10px system-ui';
    g.fillText('-60m', 2, c.height - 2); g.fillText('now', w - 22, c.height - 2);
    const colors = { taint: '#7b3294', notready: '#d73027', evicted: '#e66101' };
    const rowOf = { taint: 4, notready: 16, evicted: 28 };
    for (const e of S.events) {
      const x = w - (now - e.t) / HOUR * w;
      g.fillStyle = colors[e.kind];
      g.fillRect(Math.max(0, x - 1), rowOf[e.kind], 3, 9);
    }
  }

  function tick() {
    if (S.rowsDirty) { buildRows(); S.dirty = true; }
    if (S.dirty) {
      S.dirty = false; S.counts = zoneCounts(); renderNodes(); renderPanels();
      // First paints, for the benchmark: the node rows, then their pods.
      if (S.nodes.size && !S.marks.nodesPainted) S.marks.nodesPainted = performance.now();
      if (S.podsLoaded && S.nodes.size && !S.marks.podsPainted) S.marks.podsPainted = performance.now();
    }
    for (const el of document.querySelectorAll('.cd')) {
      const e = S.evictions.get(el.dataset.pod); if (e) el.textContent = countdown(e);
    }
    renderTimeline();
    requestAnimationFrame(tick);
  }

  function showLogin(message) {
    $('app').hidden = true; $('login').hidden = false;
    $('login-error').textContent = message || '';
    setStatus('signed out');
  }

  async function start() {
    $('login').hidden = true; $('app').hidden = false;
    setStatus('loading');
    const box = $('nodes');
    box.addEventListener('scroll', () => { S.dirty = true; });
    box.addEventListener('click', (e) => {
      const row = e.target.closest('.row.zone'); if (!row || S.zoomedOut) return;
      const z = row.dataset.zone;
      if (S.collapsed.has(z)) S.collapsed.delete(z); else S.collapsed.add(z);
      S.rowsDirty = true;
    });
    $('zoom').addEventListener('click', () => {
      S.zoomedOut = !S.zoomedOut;
      $('zoom').textContent = S.zoomedOut ? 'Zoom in: every node' : 'Zoom out: zones only';
      document.body.classList.toggle('zoomed-out', S.zoomedOut);
      S.rowsDirty = true;
    });
    window.addEventListener('resize', () => { S.dirty = true; });
    // The node rows are drawn as soon as the nodes are in; the pods fill
    // them when theirs arrive.
    let nodesIn = false, podsIn = false;
    const both = () => { if (nodesIn && podsIn) { setStatus('live'); refreshEvictions(); } else setStatus(nodesIn ? 'loading pods' : 'loading nodes'); };
    follow('/api/v1/nodes', () => listObjects('/api/v1/nodes'),
      (items) => { S.nodes.clear(); for (const n of items) putNode(n, true); nodesIn = true; refreshZones(); both(); },
      (type, n) => (type === 'DELETED' ? dropNode(n.metadata.name) : putNode(n, false)));
    follow('/api/v1/pods', listPodRows,
      (rows) => { S.pods.clear(); S.byNode.clear(); S.pending.clear(); for (const r of rows) putTrimmed(rowPod(r)); S.podsLoaded = podsIn = true; both(); },
      (type, p) => (type === 'DELETED' ? dropPod(p) : putPod(p)));
    requestAnimationFrame(tick);
  }

  // A login link's one-time code (#login=...), exchanged once for a
  // session token; a pasted token; or this tab's sessionStorage.
  async function fromLink(code) {
    const res = await fetch('/ui/api/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(body.message || 'login refused: ' + res.status);
    return body.token;
  }

  // The token: from a login link (#token=...), once, or this tab's
  // sessionStorage, or asked for.
  $('login').addEventListener('submit', (e) => { e.preventDefault(); S.token = $('token').value.trim(); sessionStorage.setItem('berth-token', S.token); start(); });
  const m = location.hash.match(/(token|login)=([^&]+)/);
  if (m) history.replaceState(null, '', location.pathname);
  (async () => {
    if (m && m[1] === 'token') sessionStorage.setItem('berth-token', decodeURIComponent(m[2]));
    if (m && m[1] === 'login') {
      try { sessionStorage.setItem('berth-token', await fromLink(decodeURIComponent(m[2]))); } catch (e) { showLogin(e.message); return; }
    }
    S.token = sessionStorage.getItem('berth-token');
    if (S.token) start(); else showLogin();
  })();
})();
