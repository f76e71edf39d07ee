// Headless Debian chromium driven by playwright-core (no browser
// download): the flags every berth browser test uses, a fresh profile.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const EXECUTABLE = process.env.BERTH_CHROMIUM || '/usr/bin/chromium';

async function launch() {
  if (!fs.existsSync(EXECUTABLE)) {
    throw new Error(`no browser at ${EXECUTABLE} (Debian package chromium; .ci/run installs it)`);
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: EXECUTABLE,
    headless: true,
    ignoreHTTPSErrors: true, // berth server's own self-signed certificate
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  return { context, close: async () => { await context.close(); fs.rmSync(profile, { recursive: true, force: true }); } };
}

// Whether the page scrolls sideways at its current width.
async function horizontalScroll(page) {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}

module.exports = { launch, horizontalScroll };
