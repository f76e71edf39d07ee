// berth's live cluster page: lists and watches nodes and pods through the
// ordinary API, counts down to the evictions the server computes
// (/ui/api/evictions, berth-core's rule), and draws only the node rows in
// view, so 5,000 nodes and 150,000 pods stay responsive. No build step.
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
    dirty: true, rowsDirty: true,
    applied: 0,            // watch events applied (tests and the benchmark read it)
  };
  window.berthUi = S;

  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const key = (o) => (o.metadata.namespace || '') + '/' + o.metadata.name;
  const zoneOf = (n) => { const l = n.metadata.labels || {}; return l['topology.kubernetes.io/zone'] || l['failure-domain.beta.kubernetes.io/zone'] || ''; };
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

  // Only what the page shows is kept of a pod: 150,000 of them fit.
  function trimPod(p) {
    const spec = p.spec || {}, st = p.status || {};
    const sched = (st.conditions || []).find((c) => c.type === 'PodScheduled');
    const owner = ((p.metadata.ownerReferences || []).find((o) => o.controller) || {});
    return { key: key(p), name: p.metadata.name, node: spec.nodeName || '', phase: st.phase || 'Pending',
      owner: owner.kind ? owner.kind + '/' + owner.name : '', deleting: !!p.metadata.deletionTimestamp,
      reason: sched && sched.status === 'False' ? (sched.reason || '') + ': ' + (sched.message || '') : '' };
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

  function dropNode(name) { S.nodes.delete(name); S.rowsDirty = true; }

  function putPod(p) {
    const t = trimPod(p), old = S.pods.get(t.key);
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

  async function list(path) {
    const body = await (await api(path)).json();
    return body;
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

  async function follow(path, load, apply) {
    for (;;) {
      let rv;
      try {
        const body = await list(path);
        load(body.items);
        rv = body.metadata.resourceVersion;
        S.dirty = true; S.rowsDirty = true;
        for (;;) rv = await watch(path, rv, apply);
      } catch (e) {
        if (e.auth) { showLogin(e.message); return; }
        setStatus('reconnecting: ' + e.message);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  function buildRows() {
    const zones = new Map();
    for (const n of S.nodes.values()) { const z = zoneOf(n); if (!zones.has(z)) zones.set(z, []); zones.get(z).push(n.metadata.name); }
    S.rows = [];
    for (const z of [...zones.keys()].sort()) {
      S.rows.push({ zone: z });
      for (const name of zones.get(z).sort()) S.rows.push({ node: name });
    }
    S.zones = zones;
    $('nodes-spacer').style.height = S.rows.length * ROW_H + 'px';
    S.rowsDirty = false;
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
    let pods = `<span class="count">${keys.size} pods</span> `;
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
        const names = S.zones.get(row.zone) || [];
        const notReady = names.filter((n) => S.nodes.has(n) && ready(S.nodes.get(n)) !== 'True').length;
        h += `<div class="row zone" style="top:${top}px">zone ${esc(row.zone || '(none)')}: ${names.length} nodes, ${notReady} not Ready</div>`;
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
    for (const n of S.nodes.values()) if (ready(n) !== 'True') notReady++;
    $('summary').textContent = `${S.nodes.size} nodes (${notReady} not Ready), ${S.pods.size} pods, ${S.pending.size} pending, ${S.evictions.size} evictions due`;
    $('node-count').textContent = `(${S.nodes.size})`;
    const evs = [...S.evictions.values()].sort((a, b) => a.dueMs - b.dueMs).slice(0, 200);
    $('evictions').innerHTML = evs.length ? evs.map((e) => { const k = e.namespace + '/' + e.name; return `<div class="ev" data-pod="${esc(k)}"><span class="countdown cd" data-pod="${esc(k)}">${countdown(e)}</span><span>${esc(k)} on ${esc(e.node)}</span><span class="why">taint ${esc(e.taint)}, toleration ${esc(e.toleration)}</span></div>`; }).join('') : '<p>None.</p>';
    let z = '';
    for (const [zone, names] of [...(S.zones || new Map()).entries()].sort()) {
      const nr = names.filter((n) => S.nodes.has(n) && ready(S.nodes.get(n)) !== 'True').length;
      z += `<div class="zone-line" data-zone="${esc(zone)}"><b>${esc(zone || '(no zone)')}</b><span>${names.length} nodes</span><span>${nr} not Ready</span></div>`;
    }
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
    if (S.dirty) { S.dirty = false; renderNodes(); renderPanels(); }
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
    $('nodes').addEventListener('scroll', () => { S.dirty = true; });
    window.addEventListener('resize', () => { S.dirty = true; });
    let loaded = 0;
    const done = () => { if (++loaded === 2) { setStatus('live'); refreshEvictions(); } };
    follow('/api/v1/nodes', (items) => { S.nodes.clear(); for (const n of items) putNode(n, true); done(); },
      (type, n) => (type === 'DELETED' ? dropNode(n.metadata.name) : putNode(n, false)));
    follow('/api/v1/pods', (items) => { S.pods.clear(); S.byNode.clear(); S.pending.clear(); for (const p of items) putPod(p); done(); },
      (type, p) => (type === 'DELETED' ? dropPod(p) : putPod(p)));
    requestAnimationFrame(tick);
  }

  // The token: from a login link (#token=...), once, or this tab's
  // sessionStorage, or asked for.
  const m = location.hash.match(/token=([^&]+)/);
  if (m) { sessionStorage.setItem('berth-token', decodeURIComponent(m[1])); history.replaceState(null, '', location.pathname); }
  S.token = sessionStorage.getItem('berth-token');
  $('login').addEventListener('submit', (e) => { e.preventDefault(); S.token = $('token').value.trim(); sessionStorage.setItem('berth-token', S.token); start(); });
  if (S.token) start(); else showLogin();
})();
