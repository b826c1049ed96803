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
-- last_key orders by active end, then by lowest id (ids are below 2^63): one number, not a list.
-- merge: client
SELECT count(*) AS execs, min(t0) AS t_min, max(t1) AS t_max, max(pe) AS max_pe,
       arg_max(id, last_key) AS last_id, arg_max(t1, last_key) AS last_t1
FROM (SELECT *, (CAST(t0 + greatest(cost_ns, 0) AS HUGEINT) << 64) - id AS last_key FROM exec_graph)
