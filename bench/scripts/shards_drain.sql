\set q random(0, 63)
SELECT coalesce(max(id), 0) AS id, coalesce(max(token), 0) AS token
  FROM queue_reserve(ARRAY['q' || :q], NULL, 'bench', 1) \gset
\if :id > 0
SELECT queue_delete(:id, :token);
\endif
