// Opens each scenario report at 1,400 and 800 px and reports, as JSON,
// what the report test asserts: cut labels, the description and
// settings, each eviction row's taint and toleration, the legend against
// what is drawn, sideways scrolling. Screenshots go to OUT_DIR.
// Usage: node report-check.js OUT_DIR REPORT.html...
'use strict';
const path = require('path');
const { launch, horizontalScroll } = require('./browser');

async function check(page) {
  return page.evaluate(() => {
    const cut = [];
    const labels = document.getElementById('labels');
    const column = labels.getBoundingClientRect();
    for (const t of labels.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      const full = t.querySelector('title') ? t.querySelector('title').textContent : '';
      const shown = t.textContent.slice(full.length);
      if (r.right > column.right + 0.5 || r.left < column.left - 0.5 || shown !== full || shown.includes('…')) {
        cut.push(shown);
      }
    }
    // A bar's label is shown only whole, inside its bar.
    for (const g of document.querySelectorAll('#plot .bar')) {
      const t = g.querySelector('text.bar-label');
      if (!t || getComputedStyle(t).display === 'none') continue;
      const r = t.getBoundingClientRect(), bar = g.querySelector('rect').getBoundingClientRect();
      if (r.right > bar.right + 0.5 || r.left < bar.left - 0.5) cut.push('bar: ' + t.textContent);
    }
    // Text anywhere in the plot must be inside the plot.
    const plot = document.getElementById('plot').getBoundingClientRect();
    for (const t of document.querySelectorAll('#plot text')) {
      if (getComputedStyle(t).display === 'none') continue;
      const r = t.getBoundingClientRect();
      if (r.width > 0 && (r.right > plot.right + 0.5 || r.left < plot.left - 0.5)) cut.push('plot: ' + t.textContent);
    }
    const rows = [...document.querySelectorAll('table.evictions tr')].slice(1).map((tr) => ({
      pod: tr.cells[0].textContent,
      taint: tr.querySelector('td.taint').textContent,
      toleration: tr.querySelector('td.toleration').textContent,
    }));
    const drawn = new Set();
    for (const el of document.querySelectorAll('#plot .bar, #plot .evicted, #plot .cancelled, #plot .due, #plot .step, #plot rect.break')) {
      for (const c of el.classList) drawn.add(c);
    }
    const legend = [...document.querySelectorAll('.legend-item')].map((e) => e.dataset.key);
    return {
      rendered: document.body.dataset.rendered,
      cut,
      description: [...document.querySelectorAll('.description p')].map((p) => p.textContent),
      settings: Object.fromEntries([...document.querySelectorAll('table.settings tr[data-flag]')].map((tr) => [tr.dataset.flag, tr.cells[1].textContent])),
      evictions: rows,
      legend,
      legendNotDrawn: legend.filter((k) => !drawn.has(k)),
      drawnNotInLegend: [...drawn].filter((k) => !['bar', 'fill'].includes(k) && !legend.includes(k)),
    };
  });
}

(async () => {
  const [outDir, ...reports] = process.argv.slice(2);
  const browser = await launch();
  const results = {};
  try {
    for (const report of reports) {
      const name = path.basename(path.dirname(report));
      for (const width of [1400, 800]) {
        const page = await browser.context.newPage();
        await page.setViewportSize({ width, height: 900 });
        await page.goto('file://' + report);
        await page.waitForFunction(() => document.body.dataset.rendered !== 'no');
        const result = await check(page);
        result.horizontalScroll = await horizontalScroll(page);
        const shot = path.join(outDir, `${name}-${width}.png`);
        await page.screenshot({ path: shot, fullPage: true });
        result.screenshot = shot;
        results[`${name}@${width}`] = result;
        await page.close();
      }
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(results, null, 1));
})().catch((e) => { console.error(e); process.exit(1); });
