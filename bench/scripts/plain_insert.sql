INSERT INTO plain_jobs (name, payload) VALUES ('job', '{"n": 1}');
