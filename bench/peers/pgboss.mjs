// bench/peers/pgboss.mjs: pg-boss and jobqueue measured in one run, through the
// same client driver (node-postgres), for bench/run.sh's "peers" scenario.
//
//   node bench/peers/pgboss.mjs [--secs=3] [--reps=3] [--backlog=40000]
//                               [--clients=1,8] [--checkpoint]
//
// The database is the PG* environment's (PGHOST, PGPORT, PGUSER, PGDATABASE):
// jobqueue's extension and bench/sql/setup.sql's objects must be there;
// pg-boss creates its schema "pgboss" at the first start.  Each figure is
// jobs per second over --secs seconds with C concurrent clients, each client
// its own connection (jobqueue: a pg.Client; pg-boss: a PgBoss instance with
// a pool of one connection), all in this one Node process:
//
//   push    pg-boss send(queue, data)          SELECT queue_push($1, $2)
//   batch   pg-boss insert([100 jobs])         SELECT queue_push_many($1::jsonb)   (100 jobs)
//   drain1  pg-boss fetch(queue) +             queue_reserve(ARRAY[$1], '60 seconds', 'w', 1)
//           complete(queue, id)                  + queue_delete(id, token)
//
// jobqueue's statements are named (prepared once per connection by node-postgres);
// pg-boss sends its own (unnamed) statements.  Every timed run starts from empty
// tables (TRUNCATE, VACUUM ANALYZE; CHECKPOINT with --checkpoint); a drain
// starts from a backlog of --backlog jobs and stops early if it empties it.
//
// Output on stdout: one "key<TAB>value" line per measured run, the keys of
// bench/run.sh's raw.tsv (peer.pgboss.push.c1, peer.ours_node.push.c1, ...,
// peer.<system>.<op>.c<C>), and peer.meta.* lines; progress on stderr.
import { createRequire } from 'node:module';
import pg from 'pg';
import PgBoss from 'pg-boss';

const require = createRequire(import.meta.url);
const PGBOSS_VERSION = require('pg-boss/package.json').version;
const PG_VERSION = require('pg/package.json').version;

const opts = { secs: 3, reps: 3, backlog: 40000, clients: '1,8', checkpoint: false };
for (const arg of process.argv.slice(2)) {
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(arg);
    if (!m || !(m[1] in opts)) {
        console.error(`pgboss.mjs: unknown argument: ${arg}`);
        process.exit(2);
    }
    opts[m[1]] = m[2] === undefined ? true : (typeof opts[m[1]] === 'number' ? Number(m[2]) : m[2]);
}
const CLIENTS = String(opts.clients).split(',').map(Number);
const QUEUE = 'default';          // jobqueue's queue_push($1, $2) pushes to 'default'
const BOSS_QUEUE = 'bench_peer';  // pg-boss's queue
const BATCH = 100;
const WARMUP = 20;                // untimed calls per client before each timed run

const log = (msg) => console.error(`[peers] ${msg}`);
const out = (key, value) => process.stdout.write(`${key}\t${value}\n`);

const admin = new pg.Client();
await admin.connect();
const sql = (text, values) => admin.query(text, values);

// pg-boss: one instance that migrates (creates the schema) and owns the queue;
// the clients' instances only check the schema.  No maintenance, no cron
// (supervise/schedule off) so that nothing of pg-boss runs in the background.
const bossBase = { max: 1, supervise: false, schedule: false, application_name: 'bench_pgboss' };
const owner = new PgBoss({ ...bossBase, migrate: true });
owner.on('error', (e) => log(`pg-boss error: ${e.message}`));
await owner.start();
if (!(await owner.getQueue(BOSS_QUEUE))) await owner.createQueue(BOSS_QUEUE);

const JOB = { n: 1 };
const OURS_JOBS = JSON.stringify(Array.from({ length: BATCH }, () => ({ name: 'job', payload: JOB })));
const BOSS_JOBS = Array.from({ length: BATCH }, () => ({ name: BOSS_QUEUE, data: JOB }));

const Q_PUSH = { name: 'peer_push', text: 'SELECT queue_push($1, $2)' };
const Q_PUSH_MANY = { name: 'peer_push_many', text: 'SELECT cardinality(queue_push_many($1::jsonb))' };
const Q_RESERVE = { name: 'peer_reserve', text: "SELECT id, token FROM queue_reserve(ARRAY[$1], '60 seconds', 'w', 1)" };
const Q_DELETE = { name: 'peer_delete', text: 'SELECT queue_delete($1, $2)' };

// One client's operations: op() does one call and returns the jobs it moved
// (0: nothing left to drain).
const systems = {
    ours_node: {
        async open() {
            const c = new pg.Client({ application_name: 'bench_ours_node' });
            await c.connect();
            return c;
        },
        close: (c) => c.end(),
        ops: {
            push: async (c) => { await c.query({ ...Q_PUSH, values: ['job', JOB] }); return 1; },
            batch: async (c) => {
                const r = await c.query({ ...Q_PUSH_MANY, values: [OURS_JOBS] });
                return Number(r.rows[0].cardinality);
            },
            drain1: async (c) => {
                const r = await c.query({ ...Q_RESERVE, values: [QUEUE] });
                if (r.rows.length === 0) return 0;
                await c.query({ ...Q_DELETE, values: [r.rows[0].id, r.rows[0].token] });
                return 1;
            },
        },
        async reset() { await sql('TRUNCATE queue_jobs'); },
        async fill(n) { await sql('SELECT bench_fill_queue($1)', [n]); },
        tables: 'queue_jobs',
    },
    pgboss: {
        async open() {
            const b = new PgBoss({ ...bossBase, migrate: false });
            b.on('error', (e) => log(`pg-boss error: ${e.message}`));
            await b.start();
            return b;
        },
        close: (b) => b.stop({ graceful: false, wait: true }),
        ops: {
            push: async (b) => { await b.send(BOSS_QUEUE, JOB); return 1; },
            batch: async (b) => { await b.insert(BOSS_JOBS); return BATCH; },
            drain1: async (b) => {
                const jobs = await b.fetch(BOSS_QUEUE);
                if (jobs.length === 0) return 0;
                await b.complete(BOSS_QUEUE, jobs[0].id);
                return 1;
            },
        },
        // pgboss.job is partitioned by queue; the archive stays empty
        // (supervise off), but is emptied too
        async reset() { await sql('TRUNCATE pgboss.job, pgboss.archive'); },
        async fill(n) {
            for (let done = 0; done < n; done += 1000) {
                const k = Math.min(1000, n - done);
                await owner.insert(Array.from({ length: k }, () => ({ name: BOSS_QUEUE, data: JOB })));
            }
        },
        tables: 'pgboss.job',
    },
};

async function settle(sys) {
    await sql(`VACUUM ANALYZE ${sys.tables}`);
    if (opts.checkpoint) await sql('CHECKPOINT');
}

// measure: C clients call op for SECS seconds (each stops early when op
// returns 0); jobs moved / elapsed seconds.
async function measure(name, op, c) {
    const sys = systems[name];
    await sys.reset();
    if (op === 'drain1') await sys.fill(opts.backlog + WARMUP * c);
    await settle(sys);
    const conns = await Promise.all(Array.from({ length: c }, () => sys.open()));
    const fn = sys.ops[op];
    try {
        // untimed: the first calls (statements prepared, caches warm)
        await Promise.all(conns.map(async (k) => { for (let i = 0; i < WARMUP; i++) await fn(k); }));
        let jobs = 0;
        let emptied = false;
        const t0 = process.hrtime.bigint();
        const deadline = t0 + BigInt(Math.round(opts.secs * 1e9));
        let tEnd = 0n;
        await Promise.all(conns.map(async (k) => {
            while (process.hrtime.bigint() < deadline) {
                const n = await fn(k);
                if (n === 0) { emptied = true; break; }
                jobs += n;
            }
            const t = process.hrtime.bigint();
            if (t > tEnd) tEnd = t;
        }));
        const secs = Number(tEnd - t0) / 1e9;
        if (emptied) log(`${name} ${op} c${c}: the backlog ran out after ${secs.toFixed(2)} s (${jobs} jobs)`);
        return jobs / secs;
    } finally {
        await Promise.all(conns.map((k) => sys.close(k)));
    }
}

out('peer.meta.pgboss', PGBOSS_VERSION);
out('peer.meta.pg', PG_VERSION);
out('peer.meta.node', process.versions.node);
out('peer.meta.backlog', opts.backlog);
for (let rep = 1; rep <= opts.reps; rep++) {
    for (const op of ['push', 'batch', 'drain1']) {
        for (const c of CLIENTS) {
            // the order of the two systems alternates between repetitions
            const order = rep % 2 ? ['pgboss', 'ours_node'] : ['ours_node', 'pgboss'];
            for (const name of order) {
                const rate = await measure(name, op, c);
                out(`peer.${name}.${op}.c${c}`, rate.toFixed(1));
                log(`rep ${rep} ${op} c${c} ${name}: ${rate.toFixed(0)} jobs/s`);
            }
        }
    }
}
await systems.ours_node.reset();
await systems.pgboss.reset();
await owner.stop({ graceful: false, wait: true });
await admin.end();
