// Issue 25's live page acceptance: the page follows a node going
// NotReady, its NoExecute taint appearing, a pod's countdown reaching
// zero and the pod disappearing, each within a second of the API event;
// screenshots at 1,400 and 800 px, with whether the page scrolls
// sideways. The API writes and a watch of the API run here, so each
// event's time is known.
// Usage: node ui-check.js SERVER_URL TOKEN OUT_DIR  (prints JSON)
'use strict';
const path = require('path');
const { launch, horizontalScroll } = require('./browser');

const [url, token, outDir] = process.argv.slice(2);
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const headers = { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', Accept: 'application/json' };

async function call(method, p, body, contentType) {
  const res = await fetch(url + p, { method, headers: Object.assign({}, headers, contentType ? { 'Content-Type': contentType } : {}), body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// Resolves with the time (ms) of the first watch event `pred` accepts.
function watchFor(p, pred) {
  return (async () => {
    const res = await fetch(url + p + '&watch=1', { headers });
    const reader = res.body.getReader(), dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('watch ended: ' + p);
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const ev = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1);
        if (pred(ev)) { const at = Date.now(); reader.cancel().catch(() => {}); return at; }
      }
    }
  })();
}

const readyStatus = (status) => ({ status: { conditions: [{ type: 'Ready', status, reason: status === 'True' ? 'KubeletReady' : 'KubeletNotReady', message: 'set by the ui test', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }] } });

(async () => {
  const result = { latencyMs: {}, seen: {} };
  await call('POST', '/api/v1/nodes', { metadata: { name: 'ui-node1', labels: { 'topology.kubernetes.io/zone': 'a' } } });
  await call('PATCH', '/api/v1/nodes/ui-node1/status', readyStatus('True'), 'application/merge-patch+json');
  await call('POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'victim' }, spec: { nodeName: 'ui-node1', terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'busybox' }], tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3 }] } });
  await call('POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'stuck' }, spec: { nodeSelector: { disk: 'none-has-it' }, containers: [{ name: 'c', image: 'busybox' }] } });

  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(url + '/ui/#token=' + encodeURIComponent(token));
    const row = '#nodes .row.node[data-node="ui-node1"]';
    await page.waitForSelector(row + ' .ready-True', { timeout: 10000 });
    result.seen.pendingReason = await page.waitForFunction(() => {
      const el = document.querySelector('#pending [data-pod="default/stuck"] .why');
      return el && el.textContent.includes('Unschedulable') && el.textContent;
    }, null, { timeout: 10000 }).then((h) => h.jsonValue());

    // Each step: the API write (its answer is the API event), then the
    // page showing it.
    async function step(name, write, shown) {
      const at = Date.now();
      await write();
      await page.waitForFunction(shown, null, { timeout: 5000, polling: 'raf' });
      result.latencyMs[name] = Date.now() - at;
    }
    await step('notReady', () => call('PATCH', '/api/v1/nodes/ui-node1/status', readyStatus('False'), 'application/merge-patch+json'),
      () => document.querySelector('#nodes .row.node[data-node="ui-node1"] .ready-False'));
    const added = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await step('taint', () => call('PATCH', '/api/v1/nodes/ui-node1', { spec: { taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: added }] } }, 'application/merge-patch+json'),
      () => document.querySelector('#nodes .row.node[data-node="ui-node1"] .chip.NoExecute'));
    await page.waitForSelector('#evictions [data-pod="default/victim"] .countdown', { timeout: 2000 });
    result.seen.evictionRow = await page.textContent('#evictions [data-pod="default/victim"]');
    const deleted = watchFor('/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dvictim', (ev) => ev.type === 'DELETED');
    // The countdown runs down to zero: every value the page renders is
    // sampled in the page, once per frame (polling from here would miss
    // the last frames before the row goes, and a Playwright query of a
    // vanished row waits out its 30 s default timeout).
    await page.evaluate(() => {
      window.berthUiCheckCountdowns = [];
      const sample = () => {
        const el = document.querySelector('#evictions [data-pod="default/victim"] .countdown');
        const seen = window.berthUiCheckCountdowns;
        if (el && seen[seen.length - 1] !== el.textContent) seen.push(el.textContent);
        requestAnimationFrame(sample);
      };
      sample();
    });
    await page.screenshot({ path: path.join(outDir, 'live-1400.png') });
    const deletedAt = await deleted;
    await page.waitForFunction(() => !document.querySelector('[data-pod="default/victim"]'), null, { timeout: 5000, polling: 'raf' });
    result.latencyMs.podGone = Date.now() - deletedAt;
    result.seen.countdowns = [...new Set(await page.evaluate(() => window.berthUiCheckCountdowns))];
    result.seen.timelineEvents = await page.evaluate(() => window.berthUi.events.map((e) => e.kind));
    result.horizontalScroll = {};
    for (const width of [1400, 800]) {
      await page.setViewportSize({ width, height: 900 });
      await page.waitForTimeout(200);
      result.horizontalScroll[width] = await horizontalScroll(page);
      await page.screenshot({ path: path.join(outDir, `live-after-${width}.png`), fullPage: true });
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result, null, 1));
})().catch((e) => { console.error(e); process.exit(1); });
