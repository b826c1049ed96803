-- events_exec_summary: the size and span of the exec graph, and where its critical path ends.
-- reads: graph_part (one bucket of the exec graph, or the whole one-bucket table: a reader step of
--        paradise.events.graphread)
-- grain: one row per bucket; the merged row is the whole run's.
-- columns:
--   execs        (count of execs with an end)
--   t_min, t_max (ns, earliest start and latest end of those execs: the makespan's bounds)
--   max_pe       (largest PE that ran an exec)
--   last_id      (id of the exec whose active time ends last, t0 + cost_ns; the lowest id on a tie:
--                 the critical path ends there)
--   last_t1      (ns, that exec's end)
--   last_key     (the order last_id is chosen by: active end, then lowest id, in one number; ids
--                 are below 2^63)
-- merge: sum(execs) min(t_min) max(t_max, max_pe, last_key) arg_max(last_id, last_key)
--        arg_max(last_t1, last_key)
SELECT count(*) AS execs, min(t0) AS t_min, max(t1) AS t_max, max(pe) AS max_pe,
       arg_max(id, last_key) AS last_id, arg_max(t1, last_key) AS last_t1, max(last_key) AS last_key
FROM (SELECT *, (CAST(t0 + greatest(cost_ns, 0) AS HUGEINT) << 64) - id AS last_key FROM graph_part)
