-- events_exec_t0: the start of one exec of the exec graph (the critical path's first).
-- reads: graph_part (one bucket of the exec graph: a reader step of paradise.events.graphread)
-- grain: one row (the exec with id $id) in the bucket that holds it, none in the others.
-- columns:
--   t0   (ns, its start)
-- merge: client (the buckets' rows united: one row in all)
SELECT t0 FROM graph_part WHERE id = $id
