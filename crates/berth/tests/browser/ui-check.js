// Issue 25's live page acceptance: the page follows a node going
// NotReady, its NoExecute taint appearing, a pod's countdown reaching
// zero and the pod disappearing, each within a second of the API event;
// screenshots at 1,400 and 800 px, with whether the page scrolls
// sideways. The API writes and a watch of the API run here, so each
// event's time is known. Also: the page opens from the server's printed
// login link (which then works no more), shows each zone's state and
// eviction rate as they change, and zoomed out shows one row of counts
// per zone.
// Usage: node ui-check.js SERVER_URL TOKEN OUT_DIR LOGIN_LINK  (prints JSON)
'use strict';
const path = require('path');
const { launch, horizontalScroll } = require('./browser');

const [url, token, outDir, loginLink] = process.argv.slice(2);
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
  await call('POST', '/api/v1/nodes', { metadata: { name: 'ui-node2', labels: { 'topology.kubernetes.io/zone': 'b' } } });
  await call('PATCH', '/api/v1/nodes/ui-node2/status', readyStatus('True'), 'application/merge-patch+json');
  await call('POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'victim' }, spec: { nodeName: 'ui-node1', terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'busybox' }], tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3 }] } });
  await call('POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'stuck' }, spec: { nodeSelector: { disk: 'none-has-it' }, containers: [{ name: 'c', image: 'busybox' }] } });

  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(loginLink);
    const row = '#nodes .row.node[data-node="ui-node1"]';
    await page.waitForSelector(row + ' .ready-True', { timeout: 10000 });
    result.seen.loginLinkHashCleared = await page.evaluate(() => location.hash === '');
    // The link works once: a second tab with it gets the login form and why.
    const again = await browser.context.newPage();
    await again.goto(loginLink);
    result.seen.loginLinkAgain = await again.waitForFunction(() => {
      const el = document.getElementById('login-error');
      return !document.getElementById('login').hidden && el.textContent && el.textContent;
    }, null, { timeout: 10000 }).then((h) => h.jsonValue());
    await again.close();
    const zoneLine = (z) => page.waitForFunction((z) => {
      const el = document.querySelector(`#zones .zone-line[data-zone="${z}"]`);
      return el && el.querySelector('.state-Normal, .state-PartialDisruption, .state-FullDisruption') && el.textContent;
    }, z, { timeout: 5000, polling: 'raf' }).then((h) => h.jsonValue());
    result.seen.zoneBefore = await zoneLine('a');
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
    // Zone a has no Ready node left: FullDisruption (zone b is fine, so
    // tainting goes on at the normal rate).
    await page.waitForSelector('#zones .zone-line[data-zone="a"] .state-FullDisruption', { timeout: 2000 });
    result.seen.zoneAfter = await zoneLine('a');
    result.seen.zoneOther = await zoneLine('b');
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
    // Zoomed out: one row per zone, with its counts, and no node rows.
    await page.click('#zoom', { timeout: 2000 });
    result.seen.zoomedOut = await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#nodes .row')];
      if (!rows.length || rows.some((r) => r.classList.contains('node'))) return false;
      return rows.map((r) => ({ zone: r.dataset.zone, counts: Object.fromEntries([...r.querySelectorAll('[data-count]')].map((c) => [c.dataset.count, c.textContent])) }));
    }, null, { timeout: 2000, polling: 'raf' }).then((h) => h.jsonValue());
    await page.screenshot({ path: path.join(outDir, 'live-zoomed-out-1400.png') });
    await page.click('#zoom', { timeout: 2000 });
    await page.waitForSelector(row, { timeout: 2000 });
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
