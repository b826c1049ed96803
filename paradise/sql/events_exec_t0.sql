-- events_exec_t0: the start of one exec of the exec graph (the critical path's first).
-- reads: exec_graph (the rows of scheduling_exec_graph, kept by paradise.events.execgraph)
-- grain: one row (the exec with id $id), none when there is no such exec.
-- columns:
--   t0   (ns, its start)
-- merge: client
SELECT t0 FROM exec_graph WHERE id = $id
