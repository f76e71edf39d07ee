// The live page with 5,000 nodes and 150,000 pods: fills a server
// through the API (nodes with a Ready status, pods bound with
// spec.nodeName, 30 a node), then measures in headless Chromium the first
// paint (navigation to the node rows drawn with every node and pod
// loaded) and how long a watch event (a node's Ready status written)
// takes to show in its row.
// Usage: node ui-bench.js SERVER_URL TOKEN [NODES] [PODS_PER_NODE]
// (start the server with --disable-scheduler and
// --controllers '*,-node-lifecycle-controller': the nodes have no agent).
'use strict';
const { launch } = require('./browser');

const [url, token, nodesArg, perNodeArg] = process.argv.slice(2);
const NODES = +(nodesArg || 5000), PER_NODE = +(perNodeArg || 30);
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const headers = { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', Accept: 'application/json' };

async function call(method, p, body, contentType) {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url + p, { method, headers: Object.assign({}, headers, contentType ? { 'Content-Type': contentType } : {}), body: JSON.stringify(body) });
    if (res.ok || res.status === 409) { await res.arrayBuffer(); return; }
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

(async () => {
  const t0 = Date.now();
  await pool(32, Array.from({ length: NODES }, (_, i) => async () => {
    await call('POST', '/api/v1/nodes', { metadata: { name: name(i), labels: { 'topology.kubernetes.io/zone': 'zone-' + (i % 3) } } });
    await call('PATCH', `/api/v1/nodes/${name(i)}/status`, status('True'), 'application/merge-patch+json');
  }));
  await pool(32, Array.from({ length: NODES * PER_NODE }, (_, j) => () => call('POST', '/api/v1/namespaces/default/pods', {
    metadata: { name: `p-${j}`, ownerReferences: [] },
    spec: { nodeName: name(j % NODES), containers: [{ name: 'c', image: 'busybox' }] },
  })));
  const filled = (Date.now() - t0) / 1000;

  const browser = await launch();
  const result = { nodes: NODES, pods: NODES * PER_NODE, fillSeconds: filled };
  try {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    // The token in this tab's sessionStorage first, as a user's login leaves it.
    await page.goto(url + '/ui/#token=' + encodeURIComponent(token));
    await page.waitForFunction(() => document.body.dataset.state === 'live', null, { timeout: 120000 });
    const firstPaint = [];
    for (let run = 0; run < 3; run++) {
      const start = Date.now();
      await page.reload();
      await page.waitForFunction(({ n, p }) => window.berthUi && window.berthUi.nodes.size === n && window.berthUi.pods.size === p
        && document.querySelector('#nodes .row.node .count'), { n: NODES, p: NODES * PER_NODE }, { timeout: 120000, polling: 'raf' });
      firstPaint.push(Date.now() - start);
    }
    result.firstPaintMs = firstPaint;
    const latency = [];
    for (let k = 0; k < 20; k++) {
      const s = k % 2 ? 'True' : 'False', cls = '.ready-' + s;
      const start = Date.now();
      await call('PATCH', `/api/v1/nodes/${name(0)}/status`, status(s), 'application/merge-patch+json');
      await page.waitForFunction((c) => document.querySelector(`#nodes .row.node[data-node="bench-00000"] ${c}`), cls, { timeout: 10000, polling: 'raf' });
      latency.push(Date.now() - start);
    }
    latency.sort((a, b) => a - b);
    result.watchEventMs = { median: latency[10], p90: latency[18], max: latency[19] };
    // Scrolling the 5,000 rows: time to draw a frame far down.
    const scroll = await page.evaluate(async () => {
      const box = document.getElementById('nodes'); const t = performance.now();
      box.scrollTop = box.scrollHeight / 2;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return performance.now() - t;
    });
    result.scrollFrameMs = Math.round(scroll);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result, null, 1) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
