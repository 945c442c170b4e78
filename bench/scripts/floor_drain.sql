WITH c AS (
    UPDATE floor_jobs SET token = 1
     WHERE id = (SELECT nextval('floor_claim_seq'))
    RETURNING id)
SELECT coalesce(max(id), 0) AS id FROM c \gset
\if :id > 0
DELETE FROM floor_jobs WHERE id = :id;
\endif
