INSERT INTO floor_jobs (payload) VALUES ('{"n": 1}');
