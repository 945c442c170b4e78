SELECT cardinality(queue_push_many(:jobs));
