-- events_exec_summary: the size and span of the exec graph, and where its critical path ends.
-- reads: exec_graph (the rows of scheduling_exec_graph, kept by paradise.events.execgraph)
-- grain: one row for the whole run.
-- columns:
--   execs        (count of execs with an end)
--   t_min, t_max (ns, earliest start and latest end of those execs: the makespan's bounds)
--   max_pe       (largest PE that ran an exec)
--   last_id      (id of the exec whose active time ends last, t0 + cost_ns; the lowest id on a tie:
--                 the critical path ends there)
--   last_t1      (ns, that exec's end)
-- merge: client
SELECT count(*) AS execs, min(t0) AS t_min, max(t1) AS t_max, max(pe) AS max_pe,
       arg_min(id, [-(t0 + greatest(cost_ns, 0)), id]) AS last_id,
       arg_min(t1, [-(t0 + greatest(cost_ns, 0)), id]) AS last_t1
FROM exec_graph
