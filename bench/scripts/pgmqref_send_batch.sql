SELECT * FROM pgmqref.send_batch('bench', :msgs);
