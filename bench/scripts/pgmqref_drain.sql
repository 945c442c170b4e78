SELECT coalesce(max(msg_id), 0) AS id FROM pgmqref.read('bench', 60, 1) \gset
\if :id > 0
SELECT pgmqref.delete('bench', :id);
\endif
