INSERT INTO plain_jobs (name, payload) VALUES ('job', '{"n": 1}') RETURNING id;
