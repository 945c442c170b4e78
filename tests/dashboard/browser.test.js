// tests/dashboard/browser.test.js - `jobqueue dashboard` in headless Chromium.
//
// Run by tests/dashboard/run.sh, which starts the dashboards (DASH_*_URL) and
// exports the preloaded cluster's PG* environment. puppeteer-core drives
// Debian's /usr/bin/chromium (no browser is ever downloaded). Every number
// the page shows is compared with what SQL says, every action with what it
// did in SQL. Last line: "N passed, N failed".
'use strict';

const puppeteer = require('puppeteer-core');
const { execFileSync, spawn } = require('child_process');
const http = require('http');
const path = require('path');

const ADMIN = process.env.DASH_ADMIN_URL;
const READONLY = process.env.DASH_READONLY_URL;
const AUTH = process.env.DASH_AUTH_URL;
const PRODUCER = process.env.DASH_PRODUCER_URL;
const PLAIN = process.env.DASH_PLAIN_URL;
const DB_SCRIPT = path.join(__dirname, 'db.sh');

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed += 1;
    console.log('ok   ' + name);
  } else {
    failed += 1;
    console.log('FAIL ' + name + (detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  }
}

// ------------------------------------------------------------ helpers

function sql(query) {
  return execFileSync('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c', query],
    { encoding: 'utf8', timeout: 20000 }).trim();
}
function literal(text) {
  return "'" + text.replace(/'/g, "''") + "'";
}
// Pushes a job and fails it with `error`; returns its id.
function failedJob(queue, name, payload, error) {
  const id = sql(`SELECT queue_push(${literal(name)}, ${literal(JSON.stringify(payload))}, ${literal(queue)},
                                    priority => 100, max_attempts => 1)`);
  sql(`WITH c AS (SELECT id, token FROM queue_reserve(ARRAY[${literal(queue)}], '1 minute', 'browser-test', 1))
       SELECT queue_fail(id, token, ${literal(error)}) FROM c`);
  return Number(id);
}
function pushMany(queue, count, options = '') {
  sql(`SELECT count(queue_push('job', '{}', ${literal(queue)}${options})) FROM generate_series(1, ${count})`);
}
function paused(queue) {
  return sql(`SELECT coalesce((SELECT paused FROM queue_list() WHERE queue = ${literal(queue)}), false)`) === 't';
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls fn() (sync or async) until it is truthy, up to ms; its last value.
async function until(fn, ms = 10000) {
  const end = Date.now() + ms;
  let value;
  for (;;) {
    try {
      value = await fn();
    } catch (e) {
      value = undefined;
    }
    if (value || Date.now() > end) return value;
    await sleep(200);
  }
}

// A raw HTTP request, so the test chooses every header (Origin, Host, ...).
function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, timeout: 15000 }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { data += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
async function pageToken(base) {
  const answer = await request(base + '/');
  const match = /name="jobqueue-token" content="([0-9a-f]+)"/.exec(answer.body);
  return match ? match[1] : '';
}
function action(base, name, body, headers) {
  return request(base + '/api/actions/' + name, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body),
  });
}

// The texts of the cells of a table's rows: [[cell, ...], ...]
function rows(page, testid) {
  return page.$$eval(`[data-testid="${testid}"] tbody tr`, (trs) =>
    trs.map((tr) => Array.from(tr.children).map((td) => td.textContent)));
}
async function jobIds(page) {
  return (await page.$$eval('[data-testid="jobs"] tbody tr[data-job]', (trs) => trs.map((tr) => tr.dataset.job)))
    .map(Number);
}
function noticeText(page) {
  return page.$eval('#notice', (n) => (n.hidden ? '' : n.className + ': ' + n.textContent));
}

// ------------------------------------------------------------ the data

function setUp() {
  // jq_dash_a: 1 failed, 2 held, 7 pending, 3 delayed
  failedJob('jq_dash_a', 'broken', { n: 0 }, 'it broke');
  sql(`SELECT count(queue_push('held', '{}', 'jq_dash_a', priority => 10)) FROM generate_series(1, 2)`);
  sql("SELECT count(*) FROM queue_reserve('{jq_dash_a}', '10 minutes', 'w-one', 2)");
  pushMany('jq_dash_a', 7);
  pushMany('jq_dash_a', 3, ", delay => '1 hour'");
  pushMany('jq_dash_page', 120);
  pushMany('jq_dash_clear', 5);
  pushMany('jq_dash_pause', 2);
  pushMany('jq_dash_cross', 1);
}

// ------------------------------------------------------------ the checks

// A queue past the overview's cap (1,000): queue_overview (1.5) gives the
// count it stopped at and an estimate, which the page shows as
// "≥ 1,000 (≈ N)" and marks as estimated; the queue's other counts, below
// the cap, stay exact.
async function estimatedCounts(page) {
  pushMany('jq_dash_big', 1500);
  sql('ANALYZE queue_jobs');
  const [counted, estimate] = sql("SELECT pending || ',' || pending_estimate FROM queue_overview(1000) WHERE queue = 'jq_dash_big'")
    .split(',');
  check('1,500 pending: queue_overview(1000) counted 1,000 and estimates about 1,500', counted === '1000' &&
    Math.abs(Number(estimate) - 1500) <= 150, { counted, estimate });
  await page.goto(ADMIN + '/#/');
  const cell = (field) => `tr[data-queue="jq_dash_big"] [data-field="${field}"]`;
  const shown = await until(() => page.$eval(cell('pending'), (td) => td.textContent).catch(() => ''));
  check('overview: an estimated count shows as "≥ 1,000 (≈ N)"', /^≥ 1,000 \(≈ [\d,]+\)$/.test(shown), shown);
  const shownEstimate = Number(shown.replace(/^.*≈ ([\d,]+)\)$/, '$1').replace(/,/g, ''));
  check('overview: N is about the 1,500 pending jobs', Math.abs(shownEstimate - 1500) <= 150, shownEstimate);
  const marks = await page.$eval(cell('pending'), (td) => [td.dataset.estimated, td.title]);
  check('overview: and is marked as estimated', marks[0] === 'true' && marks[1].includes('estimated'), marks);
  const exact = await page.$eval(cell('delayed'), (td) => [td.textContent, td.dataset.estimated]);
  check('overview: a count below the cap is shown exact', exact[0] === '0' && exact[1] === 'false', exact);
  sql("DELETE FROM queue_jobs WHERE queue = 'jq_dash_big'");
}

async function overviewMatchesSql(page) {
  await page.goto(ADMIN + '/#/');
  const row = 'tr[data-queue="jq_dash_a"]';
  check('overview: the queue is listed', Boolean(await until(() => page.$(row))));
  const expected = sql("SELECT pending || ',' || delayed || ',' || reserved || ',' || failed FROM queue_overview() WHERE queue = 'jq_dash_a'");
  const stats = sql("SELECT pending || ',' || delayed || ',' || reserved FROM queue_stats() WHERE queue = 'jq_dash_a'");
  check('the set-up holds 7 pending, 3 delayed, 2 reserved, 1 failed (queue_overview)', expected === '7,3,2,1', expected);
  const shown = await page.$eval(row, (tr) => ['pending', 'delayed', 'reserved', 'failed']
    .map((f) => tr.querySelector(`[data-field="${f}"]`).textContent).join(','));
  check('overview: pending, delayed, reserved, failed are queue_overview()\'s', shown === expected, { shown, expected });
  check('overview: and queue_stats()\'s', shown.startsWith(stats + ','), { shown, stats });
  const oldest = await page.$eval(row + ' [data-field="oldest"]', (td) => td.textContent);
  check('overview: the oldest pending job\'s age is shown', /^\d+s$|^\d+m/.test(oldest), oldest);
  const total = sql('SELECT queue_failed_count()');
  const shownTotal = await until(() => page.$eval('[data-testid="failed-total"]', (n) => n.textContent).then((t) => (t === total ? t : '')));
  check('overview: the failed total is queue_failed_count()', shownTotal === total, { shownTotal, total });
  const connection = await page.$eval('[data-testid="connection"]', (n) => n.textContent);
  check('overview: the connection is shown', connection.startsWith('database: connected to postgres'), connection);
  const chart = await page.$('[data-testid="rate-chart"] canvas');
  check('overview: the uPlot chart is drawn', Boolean(chart));

  sql("SELECT queue_pause('jq_dash_pause')");
  const pausedShown = await until(() => page.$eval('tr[data-queue="jq_dash_pause"] [data-field="paused"]',
    (td) => td.textContent === 'paused'));
  check('overview: a queue paused in SQL shows as paused', pausedShown === true);
  sql("SELECT queue_resume('jq_dash_pause')");
  const resumedShown = await until(() => page.$eval('tr[data-queue="jq_dash_pause"] [data-field="paused"]',
    (td) => td.textContent === 'active'));
  check('overview: and as active once resumed', resumedShown === true);
}

async function pauseAndResumeButtons(page) {
  await page.goto(ADMIN + '/#/queue/jq_dash_pause');
  await page.waitForSelector('button[data-action="pause"]');
  await page.click('button[data-action="pause"]');
  check('queue page: Pause pauses the queue (queue_list)', await until(() => paused('jq_dash_pause')) === true);
  check('queue page: the notice says so', (await until(() => noticeText(page))) === 'notice: paused jq_dash_pause');
  await page.click('button[data-action="resume"]');
  check('queue page: Resume resumes it', await until(() => !paused('jq_dash_pause')) === true);
}

async function paging(page) {
  const all = sql("SELECT string_agg(id::text, ',' ORDER BY id) FROM queue_jobs WHERE queue = 'jq_dash_page'")
    .split(',').map(Number);
  check('the set-up holds 120 jobs in jq_dash_page', all.length === 120, all.length);
  await page.goto(ADMIN + '/#/queue/jq_dash_page');
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const page1 = await until(async () => { const ids = await jobIds(page); return ids.length ? ids : null; });
  check('queue page: page 1 is the first 50 ids', same(page1, all.slice(0, 50)), page1 && page1.slice(0, 3));
  await page.click('[data-testid="next"]');
  const page2 = await until(async () => { const ids = await jobIds(page); return ids[0] === all[50] ? ids : null; });
  check('queue page: Next shows ids 51-100', same(page2, all.slice(50, 100)));
  await page.click('[data-testid="next"]');
  const page3 = await until(async () => { const ids = await jobIds(page); return ids[0] === all[100] ? ids : null; });
  check('queue page: Next again shows the last 20', same(page3, all.slice(100)));
  check('queue page: on the last page Next is disabled',
    await until(() => page.$eval('[data-testid="next"]', (b) => b.disabled)) === true);
  await page.click('[data-testid="prev"]');
  const back = await until(async () => { const ids = await jobIds(page); return ids[0] === all[50] ? ids : null; });
  check('queue page: Prev goes back to ids 51-100', same(back, all.slice(50, 100)));
  const label = await page.$eval('[data-testid="page-number"]', (n) => n.textContent);
  check('queue page: it says page 2', label === 'page 2', label);
  const api = JSON.parse((await request(ADMIN + '/api/jobs?queue=jq_dash_page&limit=50')).body);
  check('the jobs endpoint returns one page, never the whole queue', api.jobs.length === 50 && api.next_after === all[49],
    { rows: api.jobs.length, next_after: api.next_after });

  await page.goto(ADMIN + '/#/queue/jq_dash_a');
  await page.waitForSelector('[data-testid="state-filter"]');
  await page.select('[data-testid="state-filter"]', 'delayed');
  const delayed = Number(sql("SELECT delayed FROM queue_overview() WHERE queue = 'jq_dash_a'"));
  const states = await until(async () => {
    const r = await rows(page, 'jobs');
    return r.length === delayed && r.every((cells) => cells[2] === 'delayed') ? r.map((cells) => cells[2]) : null;
  });
  check('queue page: the state filter shows the delayed jobs only', Boolean(states), states);
}

async function clearAsksFirst(page, dialogs) {
  await page.goto(ADMIN + '/#/queue/jq_dash_clear');
  await page.waitForSelector('button[data-action="clear"]');
  dialogs.answer = false;
  await page.click('button[data-action="clear"]');
  await sleep(800);
  check('Clear asks for confirmation', dialogs.seen.some((m) => m.includes('jq_dash_clear')), dialogs.seen);
  check('Clear answered "no" deletes nothing',
    sql("SELECT count(*) FROM queue_jobs WHERE queue = 'jq_dash_clear'") === '5');
  dialogs.answer = true;
  await page.click('button[data-action="clear"]');
  check('Clear confirmed empties the queue',
    await until(() => sql("SELECT count(*) FROM queue_jobs WHERE queue = 'jq_dash_clear'") === '0') === true);
  check('the notice says how many', (await until(() => noticeText(page))) === 'notice: deleted 5 jobs from jq_dash_clear');
  const unconfirmed = await action(ADMIN, 'clear', { queue: 'jq_dash_a' },
    { Origin: ADMIN, 'X-Jobqueue-Token': await pageToken(ADMIN) });
  check('a clear without "confirm" is refused (400) and deletes nothing',
    unconfirmed.status === 400 && sql("SELECT count(*) FROM queue_jobs WHERE queue = 'jq_dash_a'") === '12', unconfirmed.status);
}

async function failedJobs(page, dialogs) {
  const one = failedJob('jq_dash_failed', 'f1', {}, 'first failure');
  const two = failedJob('jq_dash_failed', 'f2', {}, 'second failure');
  await page.goto(ADMIN + '/#/failed?queue=jq_dash_failed');
  const shown = await until(async () => ((await rows(page, 'failed')).length === 2 ? rows(page, 'failed') : null));
  check('failed page: newest first, with the error text',
    Boolean(shown) && shown[0][0] === String(two) && shown[0][5] === 'second failure' && shown[1][0] === String(one), shown);
  await page.click(`tr[data-job="${one}"] button[data-testid="retry-one"]`);
  const requeued = await until(() => sql(`SELECT (SELECT count(*) FROM queue_jobs WHERE id = ${one}) || ',' ||
                                               (SELECT count(*) FROM queue_failed_jobs WHERE id = ${one})`) === '1,0');
  check('failed page: Retry moves the job back to its queue (SQL)', requeued === true);
  check('failed page: requeued in its own queue',
    sql(`SELECT queue || ',' || attempts FROM queue_jobs WHERE id = ${one}`) === 'jq_dash_failed,0');
  dialogs.answer = true;
  // the table is rebuilt once the retried row is gone: click in the new one
  await until(async () => (await rows(page, 'failed')).length === 1);
  await page.click(`tr[data-job="${two}"] button[data-testid="forget-one"]`);
  check('failed page: Forget (confirmed) deletes the failed row',
    await until(() => sql(`SELECT count(*) FROM queue_failed_jobs WHERE id = ${two}`) === '0') === true);
  check('failed page: and asked first', dialogs.seen.some((m) => m.includes(String(two))), dialogs.seen);

  const three = failedJob('jq_dash_failed', 'f3', {}, 'third');
  const four = failedJob('jq_dash_failed', 'f4', {}, 'fourth');
  await until(async () => (await rows(page, 'failed')).length === 2);
  await page.click('button[data-testid="retry-shown"]');
  check('failed page: Retry all shown requeues every job shown',
    await until(() => sql(`SELECT count(*) FROM queue_jobs WHERE id IN (${three}, ${four})`) === '2') === true);
}

async function escaping(page) {
  // no quotes in the handler: JSON's escaped quotes would break it and hide a missing escape
  const payload = { html: '<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>' };
  const name = '<img src=x onerror="window.__pwned=3">';
  const error = '<img src=x onerror="window.__pwned=4"><script>window.__pwned=5</script> & more';
  const queue = 'jq_dash_<i>x</i>';
  const id = Number(sql(`SELECT queue_push(${literal(name)}, ${literal(JSON.stringify(payload))}, ${literal(queue)})`));
  const failedId = failedJob(queue, name, payload, error);

  await page.goto(ADMIN + '/#/job/' + id);
  const text = await until(() => page.$eval('[data-testid="job-payload"]', (n) => n.textContent));
  check('job page: the payload is shown as its text, pretty-printed', text === JSON.stringify(payload, null, 2), text);
  check('job page: the job name is shown as text',
    (await page.$eval('[data-testid="job-name"]', (n) => n.textContent)) === name);
  const made = await page.evaluate(() => document.querySelectorAll('#page img, #page script').length);
  check('job page: no element was made from the payload or the name', made === 0, made);
  await page.goto(ADMIN + '/#/job/' + failedId);
  const lastError = await until(() => page.$eval('[data-testid="job-last-error"]',
    (n, expected) => (n.textContent === expected ? n.textContent : ''), error));
  check('job page: the last error is shown as text', lastError === error, lastError);
  await page.goto(ADMIN + '/#/failed');
  const errorShown = await until(() => page.$eval(`tr[data-job="${failedId}"] [data-testid="failed-error"]`, (n) => n.textContent));
  check('failed page: the error is shown as text', errorShown === error, errorShown);
  await page.goto(ADMIN + '/#/');
  const queueShown = await until(() => page.$eval(`tr[data-queue="${queue}"] a`, (a) => a.textContent));
  check('overview: a queue name with markup is shown as text', queueShown === queue, queueShown);
  await page.goto(ADMIN + '/#/queue/' + encodeURIComponent(queue));
  const nameCell = await until(() => page.$eval(`tr[data-job="${id}"] td:nth-child(2)`, (td) => td.textContent));
  check('queue page: the job name is shown as text', nameCell === name, nameCell);
  await sleep(3500);  // a few refreshes
  const elements = await page.evaluate(() => document.querySelectorAll('#page img, #page script, #page i').length);
  check('no element was made from data', elements === 0, elements);
  check('no script of a payload, name or error ran (window.__pwned unset)',
    (await page.evaluate(() => window.__pwned)) === undefined, await page.evaluate(() => window.__pwned));
  const headers = (await request(ADMIN + '/')).headers;
  check('Content-Security-Policy: script-src \'self\', no inline script',
    /script-src 'self'(;|$)/.test(headers['content-security-policy'] || ''), headers['content-security-policy']);
  check('X-Content-Type-Options nosniff, X-Frame-Options DENY',
    headers['x-content-type-options'] === 'nosniff' && headers['x-frame-options'] === 'DENY');
}

async function readOnly(page) {
  for (const route of ['#/', '#/queue/jq_dash_a', '#/failed', '#/job/' + sql("SELECT min(id) FROM queue_failed_jobs")]) {
    await page.goto(READONLY + '/' + route);
    await until(() => page.$('#page table, #page dl'));
    await sleep(600);
    const buttons = await page.$$eval('[data-action]', (b) => b.length);
    check(`read-only ${route}: no action buttons`, buttons === 0, buttons);
  }
  check('read-only: the page says read-only', (await page.$eval('#mode', (n) => n.textContent)) === 'read-only');
  await page.goto(READONLY + '/#/');
  const status = await page.evaluate(async () => {
    const token = document.querySelector('meta[name="jobqueue-token"]').content;
    const answer = await fetch('/api/actions/pause', {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Jobqueue-Token': token },
      body: JSON.stringify({ queue: 'jq_dash_cross' }),
    });
    return answer.status;
  });
  check('read-only: a forged POST with the page\'s own token is 403', status === 403, status);
  check('read-only: and changed nothing', paused('jq_dash_cross') === false);
}

async function crossSite(page) {
  const token = await pageToken(ADMIN);
  const good = { Origin: ADMIN, 'X-Jobqueue-Token': token };
  const cases = [
    ['no token', { Origin: ADMIN }],
    ['a wrong token', { Origin: ADMIN, 'X-Jobqueue-Token': token.replace(/.$/, (c) => (c === '0' ? '1' : '0')) }],
    ['another Origin', { Origin: 'http://evil.example', 'X-Jobqueue-Token': token }],
    ['another Referer and no Origin', { Referer: 'http://evil.example/', 'X-Jobqueue-Token': token }],
    ['neither Origin nor Referer', { 'X-Jobqueue-Token': token }],
  ];
  for (const [what, headers] of cases) {
    const answer = await action(ADMIN, 'pause', { queue: 'jq_dash_cross' }, headers);
    check(`a POST with ${what} is 403`, answer.status === 403, answer.status);
  }
  const rebound = await request(ADMIN + '/api/overview', { headers: { Host: 'rebound.evil.example' } });
  check('a request naming another host (DNS rebinding) is 403', rebound.status === 403, rebound.status);
  const get = await request(ADMIN + '/api/actions/pause');
  check('GET on an action is 405 (Allow: POST)', get.status === 405 && get.headers.allow === 'POST', get.status);
  const form = await action(ADMIN, 'pause', { queue: 'jq_dash_cross' }, { ...good, 'Content-Type': 'text/plain' });
  check('a POST that is not JSON is refused (415)', form.status === 415, form.status);
  check('and none of these paused the queue', paused('jq_dash_cross') === false);

  // From a page of another origin (the read-only dashboard's port) in the browser itself.
  await page.goto(READONLY + '/#/');
  const outcome = await page.evaluate(async (target, t) => {
    const result = {};
    try {  // needs a CORS preflight, which the dashboard never grants
      await fetch(target + '/api/actions/pause', {
        method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Jobqueue-Token': t },
        body: JSON.stringify({ queue: 'jq_dash_cross' }),
      });
      result.preflighted = 'sent';
    } catch (e) {
      result.preflighted = 'refused';
    }
    try {  // what a plain form can send: no preflight, an opaque answer
      await fetch(target + '/api/actions/pause', {
        method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify({ queue: 'jq_dash_cross' }),
      });
      result.simple = 'sent';
    } catch (e) {
      result.simple = 'refused';
    }
    return result;
  }, ADMIN, token);
  check('a cross-origin page cannot send the token (the preflight fails)', outcome.preflighted === 'refused', outcome);
  await sleep(300);
  check('a cross-origin simple POST reached the dashboard but paused nothing', paused('jq_dash_cross') === false);
  const ok = await action(ADMIN, 'pause', { queue: 'jq_dash_cross' }, good);
  check('the same POST from the dashboard\'s origin with its token works', ok.status === 200 && paused('jq_dash_cross'),
    ok.status);
  sql("SELECT queue_resume('jq_dash_cross')");
}

async function privileges(page) {
  await page.goto(PRODUCER + '/#/queue/jq_dash_pause');
  await page.waitForSelector('button[data-action="pause"]');
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.click('button[data-action="pause"]');
  const notice = await until(async () => { const n = await noticeText(page); return n.startsWith('notice error') ? n : ''; });
  check('producer role: a refused action shows the server\'s error and SQLSTATE 42501',
    /permission denied.*\(SQLSTATE 42501\)$/.test(notice || ''), notice);
  check('producer role: and changed nothing', paused('jq_dash_pause') === false);
  await sleep(2000);
  check('producer role: the page keeps working (no script error)', errors.length === 0, errors);
}

async function credentials(browser) {
  for (const target of ['/', '/metrics', '/api/overview']) {
    const answer = await request(AUTH + target);
    check(`auth: ${target} without credentials is 401`, answer.status === 401, answer.status);
  }
  const challenge = (await request(AUTH + '/')).headers['www-authenticate'] || '';
  check('auth: the 401 asks for Basic credentials', challenge.startsWith('Basic '), challenge);
  const basic = (user, password) => 'Basic ' + Buffer.from(user + ':' + password).toString('base64');
  const wrong = await request(AUTH + '/metrics', { headers: { Authorization: basic('ops', 'wrong') } });
  check('auth: a wrong password is 401', wrong.status === 401, wrong.status);
  const right = await request(AUTH + '/metrics',
    { headers: { Authorization: basic(process.env.DASH_AUTH_USER, process.env.DASH_AUTH_PASSWORD) } });
  check('auth: the right credentials are served', right.status === 200, right.status);
  const page = await browser.newPage();
  await page.authenticate({ username: process.env.DASH_AUTH_USER, password: process.env.DASH_AUTH_PASSWORD });
  await page.goto(AUTH + '/#/');
  check('auth: the browser with credentials shows the overview',
    Boolean(await until(() => page.$('tr[data-queue="jq_dash_a"]'))));
  await page.close();
}

async function withoutPreload(page) {
  await page.goto(PLAIN + '/#/');
  const text = await until(() => page.$eval('[data-testid="counters"]', (n) => (n.hidden ? '' : n.textContent)));
  check('without preload: "counters need jobqueue in shared_preload_libraries"',
    text === 'counters need jobqueue in shared_preload_libraries', text);
}

async function slowDatabase() {
  // a lock held longer than the statement timeout (5 s): the request is cut, the server stays free
  const holder = spawn('psql', ['-X', '-q', '-c',
    'BEGIN; LOCK TABLE queue_jobs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(9); COMMIT;'], { stdio: 'ignore' });
  await sleep(700);
  const started = Date.now();
  const [slow, other] = await Promise.all([
    request(ADMIN + '/api/overview'),
    sleep(300).then(() => request(ADMIN + '/favicon.ico')),
  ]);
  const seconds = (Date.now() - started) / 1000;
  const body = JSON.parse(slow.body || '{}');
  check('slow database: the request is cut by statement_timeout (504, 57014) within ~5 s',
    slow.status === 504 && body.sqlstate === '57014' && seconds < 8, { status: slow.status, body, seconds });
  check('slow database: the server answers other requests meanwhile', other.status === 204, other.status);
  await new Promise((resolve) => holder.on('exit', resolve));
  const after = await request(ADMIN + '/api/overview');
  check('slow database: then answers again', after.status === 200, after.status);
}

async function databaseGoneAndBack(page) {
  await page.goto(ADMIN + '/#/');
  await page.waitForSelector('tr[data-queue="jq_dash_a"]');
  execFileSync('bash', [DB_SCRIPT, 'stop', process.env.DASH_MAIN_ENV], { timeout: 30000 });
  const banner = await until(() => page.$eval('#banner', (b) => (b.hidden ? '' : b.textContent)), 15000);
  check('database stopped: the banner says "database unreachable: ..."', (banner || '').startsWith('database unreachable: '), banner);
  const metrics = await request(ADMIN + '/metrics');
  check('database stopped: /metrics says jobqueue_up 0', metrics.status === 200 && /^jobqueue_up 0$/m.test(metrics.body),
    metrics.body.slice(0, 200));
  execFileSync('bash', [DB_SCRIPT, 'start', process.env.DASH_MAIN_ENV], { timeout: 30000 });
  const gone = await until(() => page.$eval('#banner', (b) => b.hidden), 20000);
  check('database started: the banner goes away by itself', gone === true);
  check('database started: the numbers are back', Boolean(await until(() => page.$('tr[data-queue="jq_dash_a"]'))));
  const up = await request(ADMIN + '/metrics');
  check('database started: /metrics says jobqueue_up 1', /^jobqueue_up 1$/m.test(up.body));
}

// A route part that is no valid escape (decodeURIComponent throws URIError)
// is "not found": the page is rebuilt, no exception escapes, and no button
// of the page before stays.
async function malformedRoute(page) {
  const errors = [];
  const onError = (e) => errors.push(String(e && e.message));
  page.on('pageerror', onError);
  try {
    await page.goto(ADMIN + '/#/queue/jq_dash_a');
    await until(() => page.$('button[data-action="pause"]'));
    await page.evaluate(() => { location.hash = '#/queue/%E0%A4%A'; });
    const notFound = await until(() => page.$('[data-testid="not-found"]'), 5000);
    const buttons = await page.$$eval('#page button', (b) => b.length);
    check('a malformed escape in the route after a queue page: "not found", no button of the queue page left',
      Boolean(notFound) && buttons === 0, { notFound: Boolean(notFound), buttons });
    await page.goto('about:blank');
    await page.goto(ADMIN + '/#/job/%E0%A4%A');
    const fresh = await until(() => page.$('[data-testid="not-found"]'), 5000);
    check('a malformed escape in the route of a page just opened: "not found"', Boolean(fresh));
    check('and no uncaught exception (URIError) in the page', errors.length === 0, errors);
    await page.evaluate(() => { location.hash = '#/'; });
    check('and the overview still comes back', Boolean(await until(() => page.$('[data-testid="queues"] tbody tr'))));
  } finally {
    page.off('pageerror', onError);
  }
}

// A job named "invoice \u202Efdp.exe" (U+202E RIGHT-TO-LEFT OVERRIDE) must
// neither reorder the text around it nor pass for "invoice exe.pdf": each
// name is in a <bdi> of its own (unicode-bidi: isolate; a table cell is
// isolated by the browser already, an inline name is not) with the control
// spelled out, and so is every confirmation.
async function bidiText(page, dialogs) {
  const queue = 'jq_dash_bidi\u202Eevil';
  const name = 'invoice \u202Efdp.exe';
  const worker = 'w-\u202Eowt';
  const id = Number(sql(`SELECT queue_push(${literal(name)}, '{}', ${literal(queue)})`));
  sql(`SELECT count(*) FROM queue_reserve(ARRAY[${literal(queue)}], '10 minutes', ${literal(worker)}, 1)`);
  sql(`SELECT queue_push('other', '{}', ${literal(queue)})`);
  // the nearest element around a text node that holds `text`: its tag and unicode-bidi
  const isolation = (selector, text) => page.evaluate((sel, t) => {
    const scope = document.querySelector(sel);
    if (!scope) return null;
    const walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.nodeValue !== t) continue;
      const e = n.parentElement;
      return { tag: e.tagName, bidi: getComputedStyle(e).unicodeBidi };
    }
    return null;
  }, selector, text);
  const isolated = (r) => Boolean(r) && r.tag === 'BDI' && r.bidi === 'isolate';
  const shown = (text) => text.replace(/\u202E/g, '⟨U+202E⟩');

  await page.goto(ADMIN + '/#/queue/' + encodeURIComponent(queue));
  await until(() => page.$(`tr[data-job="${id}"]`));
  let r = await isolation(`tr[data-job="${id}"]`, shown(name));
  check('queue page: the job name is isolated (bdi), shown as "invoice ⟨U+202E⟩fdp.exe"', isolated(r), r);
  r = await isolation(`tr[data-job="${id}"]`, shown(worker));
  check('queue page: the lease holder is isolated, U+202E spelled out', isolated(r), r);
  r = await isolation('[data-testid="queue-name"]', shown(queue));
  check('queue page: the queue name is isolated, U+202E spelled out', isolated(r), r);
  dialogs.seen.length = 0;
  dialogs.answer = false;
  await page.click('button[data-action="clear"]');
  await until(() => dialogs.seen.length);
  const clearText = dialogs.seen[0] || '';
  check('queue page: Clear\'s confirmation spells U+202E out (⟨U+202E⟩) and holds no raw U+202E',
    clearText.includes('jq_dash_bidi⟨U+202E⟩evil') && !clearText.includes('\u202E'), clearText);

  await page.goto(ADMIN + '/#/job/' + id);
  await until(() => page.$('[data-testid="job-name"] bdi'));
  r = await isolation('[data-testid="job-name"]', shown(name));
  check('job page: the job name is isolated, U+202E spelled out', isolated(r), r);
  r = await isolation('[data-testid="job-queue"]', shown(queue));
  check('job page: the queue name is isolated, U+202E spelled out', isolated(r), r);
  dialogs.seen.length = 0;
  await page.click('button[data-action="cancel"]');
  await until(() => dialogs.seen.length);
  const cancelText = dialogs.seen[0] || '';
  check('job page: Cancel\'s confirmation names the job with U+202E spelled out',
    cancelText.includes('invoice ⟨U+202E⟩fdp.exe') && !cancelText.includes('\u202E'), cancelText);
  dialogs.answer = true;
  check('and nothing was cancelled or cleared (both dismissed)',
    sql(`SELECT count(*) FROM queue_jobs WHERE queue = ${literal(queue)}`) === '2');

  await page.goto(ADMIN + '/#/workers');
  await until(() => page.$(`section.worker tr[data-job="${id}"]`));
  r = await isolation('[data-testid="workers"]', shown(worker));
  check('workers page: the worker name is isolated, U+202E spelled out', isolated(r), r);
  r = await isolation(`[data-testid="workers"] tr[data-job="${id}"]`, shown(name));
  check('workers page: the job name is isolated, U+202E spelled out', isolated(r), r);

  await page.goto(ADMIN + '/#/');
  await until(() => page.$(`tr[data-queue="${queue}"]`));
  r = await isolation(`tr[data-queue="${queue}"]`, shown(queue));
  check('overview: the queue name is isolated, U+202E spelled out', isolated(r), r);
  sql(`DELETE FROM queue_jobs WHERE queue = ${literal(queue)}`);
}

// ------------------------------------------------------------ main

async function main() {
  setUp();
  const browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(10000);
    await page.setViewport({ width: 1200, height: 900 });
    const dialogs = { answer: true, seen: [] };
    page.on('dialog', async (dialog) => {
      dialogs.seen.push(dialog.message());
      if (dialogs.answer) await dialog.accept();
      else await dialog.dismiss();
    });
    const parts = [overviewMatchesSql, estimatedCounts, pauseAndResumeButtons, paging, clearAsksFirst, failedJobs, escaping,
      malformedRoute, bidiText, readOnly, crossSite, privileges, () => credentials(browser), withoutPreload, slowDatabase, databaseGoneAndBack];
    for (const part of parts) {
      try {
        await part(page, dialogs);
      } catch (e) {
        check((part.name || 'a part') + ' ran to its end', false, String(e && e.stack ? e.stack.split('\n').slice(0, 3) : e));
      }
    }
  } finally {
    await browser.close();
  }
}

main().catch((e) => check('the browser test ran', false, String(e))).finally(() => {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
});
