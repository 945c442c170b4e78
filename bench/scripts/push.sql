SELECT queue_push('job', '{"n": 1}');
