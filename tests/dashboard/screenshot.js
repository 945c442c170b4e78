// tests/dashboard/screenshot.js - the overview of a busy queue, as a PNG.
//
// Run by tests/dashboard/run.sh against the admin dashboard on a fresh
// cluster: two producers push (psql, \watch) into "email" and "images", a
// `jobqueue work` drains them, some jobs fail and some wait; after
// DASH_SHOT_SECONDS the overview is saved to DASH_SCREENSHOT. The checks:
// the rates the page charts are not zero for pushes and completions, the
// chart is drawn, and the PNG is a PNG of reasonable size.
// Last line: "N passed, N failed".
'use strict';

const puppeteer = require('puppeteer-core');
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const http = require('http');

const ADMIN = process.env.DASH_ADMIN_URL;
const OUT = process.env.DASH_SCREENSHOT;
const SECONDS = Number(process.env.DASH_SHOT_SECONDS || 14);

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) passed += 1; else failed += 1;
  console.log((ok ? 'ok   ' : 'FAIL ') + name + (ok || detail === undefined ? '' : ': ' + JSON.stringify(detail)));
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
function getJson(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { timeout: 10000 }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => { try { resolve(JSON.parse(data)); } catch (e) { reject(e); } });
    }).on('error', reject);
  });
}

// A psql that runs `statement` every `seconds` until it is stopped.
function producer(statement, seconds) {
  const child = spawn('psql', ['-X', '-q', '-f', '-'], { stdio: ['pipe', 'ignore', 'inherit'] });
  child.stdin.end(statement + '\n\\watch ' + seconds + '\n');
  return child;
}

async function main() {
  // a backlog that waits (delayed), and a few dead letters
  execFileSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `
    SELECT count(queue_push('send_report', '{}', 'reports', delay => '2 hours')) FROM generate_series(1, 40);
    SELECT count(queue_push('resize', jsonb_build_object('file', 'huge-' || g || '.tiff'), 'images', max_attempts => 1,
                            priority => 9)) FROM generate_series(1, 3) g;
    WITH c AS (SELECT id, token FROM queue_reserve('{images}', '1 minute', 'screenshot', 3))
      SELECT count(queue_fail(id, token, 'out of memory decoding the image')) FROM c;`], { timeout: 20000 });
  const children = [
    // about 90 jobs/s pushed, a little more than the worker's 4 slow slots complete: a backlog grows
    producer("SELECT count(queue_push('send_email', jsonb_build_object('to', 'user' || g || '@example.com'), 'email')) FROM generate_series(1, 12) g", 0.2),
    producer("SELECT count(queue_push('resize', jsonb_build_object('file', 'photo' || g || '.png'), 'images')) FROM generate_series(1, 6) g", 0.2),
    spawn(process.env.DASH_JOBQUEUE_BIN, ['work', '--queues', 'email,images', '--exec', 'sleep 0.05', '--concurrency', '4',
      '--quiet'], { stdio: 'ignore' }),
  ];
  let browser;
  try {
    browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    const page = await browser.newPage();
    await page.setViewport({ width: 1100, height: 640, deviceScaleFactor: 1 });
    await page.goto(ADMIN + '/#/');
    await sleep(SECONDS * 1000);
    const data = await getJson(ADMIN + '/api/overview');
    const recent = data.rates.slice(-3);
    check('busy: the chart\'s recent rates show pushes', recent.length === 3 && recent.every((p) => p[1] > 0), recent);
    check('busy: and completions by the worker', recent.length === 3 && recent.some((p) => p[2] > 0), recent);
    check('busy: the chart is drawn', Boolean(await page.$('[data-testid="rate-chart"] canvas')));
    await page.screenshot({ path: OUT, type: 'png', fullPage: true });
    const png = fs.readFileSync(OUT);
    check('the screenshot is a PNG', png.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])));
    check('the screenshot is reasonably small (under 300 kB)', png.length < 300 * 1024, png.length);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.on('exit', resolve);
    })));
    if (browser) await browser.close();
  }
}

main().catch((e) => check('the screenshot part ran', false, String(e))).finally(() => {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
});
