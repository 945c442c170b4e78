INSERT INTO floor_jobs (payload) SELECT e FROM jsonb_array_elements(:jobs) AS e;
