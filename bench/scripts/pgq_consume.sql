BEGIN;
SELECT coalesce(pgq.next_batch('bench', 'bench_consumer'), 0) AS bid \gset
\if :bid > 0
SELECT count(*) FROM pgq.get_batch_events(:bid);
SELECT pgq.finish_batch(:bid);
\endif
COMMIT;
