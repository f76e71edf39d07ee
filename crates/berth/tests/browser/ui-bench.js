// The live page with 5,000 nodes and 150,000 pods: fills a server
// through the API (nodes with a Ready status, pods bound with
// spec.nodeName, 30 a node; skipped with --filled, as `berth-bench ui`
// fills it itself), then measures in headless Chromium, over RUNS
// reloads: the first paint of the node rows (every node drawn, from the
// navigation's start: the page's own performance mark), the paint of
// their pods (every pod in and drawn), and the reload to both; then how
// long a watch event (a node's Ready status written) takes to show in
// its row.
// Usage: node ui-bench.js SERVER_URL TOKEN [NODES] [PODS_PER_NODE] [--filled] [--runs=N]
// (start the server with --disable-scheduler and
// --controllers '*,-node-lifecycle-controller': the nodes have no agent).
'use strict';
const { launch } = require('./browser');

const args = process.argv.slice(2);
const flags = args.filter((a) => a.startsWith('--'));
const [url, token, nodesArg, perNodeArg] = args.filter((a) => !a.startsWith('--'));
const NODES = +(nodesArg || 5000), PER_NODE = +(perNodeArg || 30);
const FILLED = flags.includes('--filled');
const RUNS = +((flags.find((f) => f.startsWith('--runs=')) || '--runs=5').slice(7));
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const headers = { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', Accept: 'application/json' };

async function call(method, p, body, contentType) {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url + p, { method, headers: Object.assign({}, headers, contentType ? { 'Content-Type': contentType } : {}), body: body && JSON.stringify(body) });
    if (res.ok || res.status === 409) return res.json();
    const text = await res.text();
    if (res.status === 429 && attempt < 20) { await new Promise((r) => setTimeout(r, 100)); continue; }
    throw new Error(`${method} ${p}: ${res.status} ${text}`);
  }
}

async function pool(n, jobs) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < jobs.length) await jobs[i++](); }));
}

const status = (s) => ({ status: { conditions: [{ type: 'Ready', status: s, reason: 'bench', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }] } });
const name = (i) => 'bench-' + String(i).padStart(5, '0');
const quantiles = (xs) => { const s = [...xs].sort((a, b) => a - b); const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))]; return { median: q(0.5), p90: q(0.9), max: s[s.length - 1] }; };

(async () => {
  const t0 = Date.now();
  if (!FILLED) {
    await pool(32, Array.from({ length: NODES }, (_, i) => async () => {
      await call('POST', '/api/v1/nodes', { metadata: { name: name(i), labels: { 'topology.kubernetes.io/zone': 'zone-' + (i % 3) } } });
      await call('PATCH', `/api/v1/nodes/${name(i)}/status`, status('True'), 'application/merge-patch+json');
    }));
    await pool(32, Array.from({ length: NODES * PER_NODE }, (_, j) => () => call('POST', '/api/v1/namespaces/default/pods', {
      metadata: { name: `p-${j}`, ownerReferences: [] },
      spec: { nodeName: name(j % NODES), containers: [{ name: 'c', image: 'busybox' }] },
    })));
  }
  const filled = (Date.now() - t0) / 1000;
  // The node whose Ready status the watch figure writes.
  const first = (await call('GET', '/api/v1/nodes?limit=1')).items[0].metadata.name;

  const browser = await launch();
  const result = { nodes: NODES, pods: NODES * PER_NODE, fillSeconds: FILLED ? null : filled };
  try {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    // The token in this tab's sessionStorage first, as a user's login leaves it.
    await page.goto(url + '/ui/#token=' + encodeURIComponent(token));
    await page.waitForFunction(() => document.body.dataset.state === 'live', null, { timeout: 120000 });
    const nodesPaint = [], podsPaint = [], reloadToAll = [];
    for (let run = 0; run < RUNS; run++) {
      const start = Date.now();
      await page.reload();
      await page.waitForFunction(({ n, p }) => window.berthUi && window.berthUi.nodes.size === n && window.berthUi.pods.size === p
        && window.berthUi.marks.podsPainted && document.querySelector('#nodes .row.node .count:not(.loading)'), { n: NODES, p: NODES * PER_NODE }, { timeout: 120000, polling: 'raf' });
      reloadToAll.push(Date.now() - start);
      const marks = await page.evaluate(() => window.berthUi.marks);
      nodesPaint.push(Math.round(marks.nodesPainted));
      podsPaint.push(Math.round(marks.podsPainted));
    }
    result.runs = RUNS;
    result.nodeRowsPaintMs = nodesPaint;
    result.podsPaintMs = podsPaint;
    result.reloadToAllLoadedMs = reloadToAll;
    const latency = [];
    for (let k = 0; k < 20; k++) {
      const s = k % 2 ? 'True' : 'False', cls = '.ready-' + s;
      const start = Date.now();
      await call('PATCH', `/api/v1/nodes/${first}/status`, status(s), 'application/merge-patch+json');
      await page.waitForFunction(({ n, c }) => document.querySelector(`#nodes .row.node[data-node="${n}"] ${c}`), { n: first, c: cls }, { timeout: 10000, polling: 'raf' });
      latency.push(Date.now() - start);
    }
    result.watchEventMs = quantiles(latency);
    // Scrolling the 5,000 rows: time to draw a frame far down.
    const scroll = await page.evaluate(async () => {
      const box = document.getElementById('nodes'); const t = performance.now();
      box.scrollTop = box.scrollHeight / 2;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return performance.now() - t;
    });
    result.scrollFrameMs = Math.round(scroll);
    // Zoomed out: one row per zone, every count recomputed.
    const zoom = await page.evaluate(async () => {
      const t = performance.now();
      document.getElementById('zoom').click();
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return { ms: performance.now() - t, rows: document.querySelectorAll('#nodes .row').length };
    });
    result.zoomOutFrameMs = Math.round(zoom.ms);
    result.zoomedOutRows = zoom.rows;
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result, null, 1) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
