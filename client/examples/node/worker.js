// Worker: claim a job, run it, then complete, retry or fail it, until SIGINT or SIGTERM.
//
//   node worker.js [--queue QUEUE] [--lease SECONDS]     (connection from the PG* environment)
//
// Prints one line per job run: "job ID NAME attempt N: OUTCOME".
//
// Most handlers run outside any transaction and the job is completed afterwards. The
// transactional one (record_delivery) writes its row and completes the job with
// queue_delete(id, token) in one transaction, on a second connection: both commit, or
// neither does, so a job whose lease was lost meanwhile leaves no row behind.
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';

// A transient error: run the job again after `delaySeconds`.
class RetryLater extends Error {
  constructor(message, delaySeconds) {
    super(message);
    this.delaySeconds = delaySeconds;
  }
}

// Running the job again cannot help: it goes to queue_failed_jobs.
class PermanentError extends Error {}

// ---- the application's handlers, by job name; `signal` aborts when the lease is lost
const handlers = {
  async send_receipt(job) {
    if (!('order' in job.payload)) throw new PermanentError('payload has no "order"');
  },
  async charge_card(job) {
    // simulated: the payment gateway times out on the first try
    if (job.attempts === 1) throw new RetryLater('payment gateway timed out', 1);
  },
  async build_report(job, signal) {
    for (let step = 0; step < (job.payload.seconds ?? 5); step++) {
      await sleep(1000, undefined, { signal }); // one step of a job that outlives its lease
    }
  },
};

// ---- handlers whose writes commit with the job's completion, or not at all: `tx` is
// the connection of the transaction that also completes the job
const txHandlers = {
  async record_delivery(job, tx) {
    await tx.query('INSERT INTO example_deliveries (order_id, job_id, worker) VALUES ($1, $2, $3)',
      [job.payload.order, job.id, `${os.hostname()}:${process.pid}`]);
    await sleep((job.payload.stall ?? 0) * 1000); // simulated: a slow step, during which the lease may be lost
  },
};

async function unknownName(job) {
  throw new PermanentError(`no handler for job name '${job.name}'`);
}

const { values } = parseArgs({
  options: { queue: { type: 'string', default: 'mail' }, lease: { type: 'string', default: '30' } } });
const lease = `${Number(values.lease)} seconds`;
const client = new pg.Client(); // no config: PGHOST, PGPORT, PGUSER, PGDATABASE
await client.connect(); // every statement its own transaction: a claim commits at once
const txClient = new pg.Client(); // the transactional handlers' connection
await txClient.connect();
// two workers may start at once: one creates the table
await txClient.query('BEGIN');
await txClient.query('SELECT pg_advisory_xact_lock(4711)');
await txClient.query(`CREATE TABLE IF NOT EXISTS example_deliveries
                        (order_id bigint NOT NULL, job_id bigint NOT NULL, worker text NOT NULL)`);
await txClient.query('COMMIT');

// Each call carries the claim's fencing token and answers false when the claim was lost.
async function held(sql, job, ...args) {
  const { rows } = await client.query(`SELECT ${sql} AS held`, [job.id, job.token, ...args]);
  return rows[0].held;
}
const complete = (job) => held('queue_delete($1, $2)', job);
const release = (job, delay, error) => held('queue_release($1, $2, delay => $3, error => $4)', job, delay, error);
const fail = (job, error) => held('queue_fail($1, $2, error => $3)', job, error);
const extend = (job) => held('queue_extend($1, $2, $3)', job, lease);

// handler(job, txClient) and queue_delete(id, token) in one transaction: an exception
// rolls both back (and is rethrown); a stale token rolls the handler's writes back.
async function completeInTransaction(job, handler) {
  await txClient.query('BEGIN');
  try {
    await handler(job, txClient);
    const { rows } = await txClient.query('SELECT queue_delete($1, $2) AS held', [job.id, job.token]);
    if (!rows[0].held) { // another worker holds the job now: our writes must go
      await txClient.query('ROLLBACK');
      return 'lease lost, rolled back';
    }
    await txClient.query('COMMIT'); // rejects if the COMMIT fails: then nothing was written
    return 'done';
  } catch (error) {
    await txClient.query('ROLLBACK').catch(() => {}); // a lost connection rolled back already
    throw error;
  }
}

// Runs the job's handler, extending the lease meanwhile, and tells the queue how it went.
async function run(job) {
  const lost = new AbortController();
  const heartbeat = setInterval(() => {
    extend(job).then((stillHeld) => stillHeld || lost.abort(), () => lost.abort());
  }, Number(values.lease) * 500);
  let error = null;
  try {
    // the token decides whether a transactional job is still ours, not the heartbeat
    if (job.name in txHandlers) return await completeInTransaction(job, txHandlers[job.name]);
    await (handlers[job.name] ?? unknownName)(job, lost.signal);
  } catch (e) {
    error = e;
  } finally {
    clearInterval(heartbeat);
  }
  if (lost.signal.aborted) return 'lease lost while running';
  let stillHeld, outcome;
  if (error === null) {
    [stillHeld, outcome] = [await complete(job), 'done'];
  } else if (error instanceof RetryLater) {
    [stillHeld, outcome] = [await release(job, `${error.delaySeconds} seconds`, error.message),
      `retry in ${error.delaySeconds}s: ${error.message}`];
  } else if (error instanceof PermanentError) {
    [stillHeld, outcome] = [await fail(job, error.message), `failed: ${error.message}`];
  } else { // a bug or an unforeseen error: delay null lets the server's backoff pace the retries
    [stillHeld, outcome] = [await release(job, null, String(error)), `released with backoff: ${error}`];
  }
  return stillHeld ? outcome : 'lease lost, outcome dropped';
}

let stopping = false; // graceful: finish the job in hand, claim no more
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => { stopping = true; });

const worker = `${os.hostname()}:${process.pid}`;
while (!stopping) {
  // Waits in the server up to 1 s for a job to be due, so a stop is seen within a second.
  const { rows } = await client.query(
    `SELECT id, token, name, payload, attempts
       FROM queue_reserve($1, lease => $2, worker => $3, max_jobs => 1, wait => '1 second')`,
    [[values.queue], lease, worker]);
  for (const job of rows) console.log(`job ${job.id} ${job.name} attempt ${job.attempts}: ${await run(job)}`);
}
await txClient.end();
await client.end();
console.log('worker stopped');
