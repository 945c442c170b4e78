#!/usr/bin/env python3
"""Producer: an order row and its "send the receipt" job in one transaction.

    python3 producer.py [--queue QUEUE] ORDER_ID     (connection from the PG* environment)

Places order ORDER_ID (committed: the order and its job both exist), then
order ORDER_ID + 1, whose payment is declined (rolled back: neither exists).
"""
import argparse

import psycopg2
from psycopg2.extras import Json


class PaymentDeclined(Exception):
    pass


def insert_order(cur, queue, order_id, total):
    """The application's INSERT and the job's push, in the cursor's transaction."""
    cur.execute("INSERT INTO example_orders (id, total) VALUES (%s, %s)", (order_id, total))
    cur.execute("SELECT queue_push('send_receipt', %s, queue => %s)", (Json({"order": order_id}), queue))
    return cur.fetchone()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", default="mail")
    parser.add_argument("order_id", type=int)
    args = parser.parse_args()
    order = args.order_id

    conn = psycopg2.connect("")  # "": libpq's defaults, i.e. PGHOST, PGPORT, PGUSER, PGDATABASE
    # "with conn" is one transaction: COMMIT when the block ends, ROLLBACK if an exception leaves it.
    with conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS example_orders (id bigint PRIMARY KEY, total numeric NOT NULL)")

    with conn, conn.cursor() as cur:
        job_id = insert_order(cur, args.queue, order, 99.50)
    print(f"order {order} committed, job {job_id}")

    try:
        with conn, conn.cursor() as cur:
            job_id = insert_order(cur, args.queue, order + 1, 12.00)
            raise PaymentDeclined()  # the order and its job roll back together
    except PaymentDeclined:
        print(f"order {order + 1} rolled back, job {job_id} with it")
    conn.close()


if __name__ == "__main__":
    main()
