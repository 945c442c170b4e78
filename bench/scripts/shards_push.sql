\set q random(0, 63)
SELECT queue_push('job', '{"n": 1}', 'q' || :q);
