INSERT INTO plain_jobs (name, payload) SELECT 'job', e -> 'payload' FROM jsonb_array_elements(:jobs) AS e RETURNING id;
