// Producer: an order row and its "send the receipt" job in one transaction.
//
//   node producer.js [--queue QUEUE] ORDER_ID     (connection from the PG* environment)
//
// Places order ORDER_ID (committed: the order and its job both exist), then
// order ORDER_ID + 1, whose payment is declined (rolled back: neither exists).
import { parseArgs } from 'node:util';
import pg from 'pg';

class PaymentDeclined extends Error {}

// Runs work() between BEGIN and COMMIT; an exception rolls everything back.
async function inTransaction(client, work) {
  await client.query('BEGIN');
  try {
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

// The application's INSERT and the job's push, on the same connection.
async function insertOrder(client, queue, orderId, total) {
  await client.query('INSERT INTO example_orders (id, total) VALUES ($1, $2)', [orderId, total]);
  const { rows } = await client.query(
    "SELECT queue_push('send_receipt', $1, queue => $2) AS id", [{ order: orderId }, queue]);
  return rows[0].id;
}

const { values, positionals } = parseArgs({
  options: { queue: { type: 'string', default: 'mail' } }, allowPositionals: true });
const order = Number(positionals[0]);
const client = new pg.Client(); // no config: PGHOST, PGPORT, PGUSER, PGDATABASE
await client.connect();
await client.query('CREATE TABLE IF NOT EXISTS example_orders (id bigint PRIMARY KEY, total numeric NOT NULL)');

const jobId = await inTransaction(client, () => insertOrder(client, values.queue, order, 99.5));
console.log(`order ${order} committed, job ${jobId}`);

let declinedJobId;
try {
  await inTransaction(client, async () => {
    declinedJobId = await insertOrder(client, values.queue, order + 1, 12.0);
    throw new PaymentDeclined(); // the order and its job roll back together
  });
} catch (error) {
  if (!(error instanceof PaymentDeclined)) throw error;
  console.log(`order ${order + 1} rolled back, job ${declinedJobId} with it`);
}
await client.end();
