SELECT * FROM pgmqref.send('bench', '{"n": 1}');
