WITH c AS (
    UPDATE plain_jobs
       SET available_at = now() + interval '60 seconds',
           reserved_until = now() + interval '60 seconds',
           reserved_by = 'bench', attempts = attempts + 1,
           token = nextval('plain_tokens')
     WHERE id = (SELECT id FROM plain_jobs
                  WHERE available_at <= now()
                  ORDER BY priority DESC, available_at, id
                  LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, token, queue, name, payload, attempts, max_attempts)
SELECT coalesce(max(id), 0) AS id, coalesce(max(token), 0) AS token FROM c \gset
\if :id > 0
DELETE FROM plain_jobs WHERE id = :id AND token = :token;
\endif
