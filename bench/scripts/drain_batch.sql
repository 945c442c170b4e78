WITH c AS (SELECT * FROM queue_reserve('{default}', NULL, 'bench', 100))
SELECT queue_delete_many(array_agg(id), array_agg(token)) FROM c HAVING count(*) > 0;
