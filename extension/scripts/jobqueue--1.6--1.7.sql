/*
 * jobqueue 1.6 -> 1.7: the claim index leads with the queue's hash.
 *
 * Up to 1.6 the claim index was (queue, priority DESC, available_at, id)
 * WHERE ready.  Its first column, a text, has no fixed place in an index
 * entry, so every comparison of an entry (each push's and each claim's
 * descent of the index, and each entry a claim reads) found the three
 * columns after it by walking the entry: about an eighth of a batch push's
 * work, a tenth of a claim's.  From 1.7 the index leads with
 * pg_catalog.hashtext(queue), an integer, and the columns after it are at
 * fixed places.  Two queues whose names hash alike share a range of the
 * index: every search also compares the name itself (the claim statements
 * as a filter, the direct claim on the row it found), so a job is only ever
 * claimed by its own queue.  The table, its rows and every function are
 * 1.6's; only the index is built again, within the update's transaction.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.7'" to load this file. \quit

DROP INDEX @extschema@.queue_jobs_claim_idx;
CREATE INDEX queue_jobs_claim_idx
    ON @extschema@.queue_jobs (pg_catalog.hashtext(queue), priority DESC, available_at, id)
    WHERE ready;
