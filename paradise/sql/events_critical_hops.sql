-- events_critical_hops: the execs where a walk back along critical predecessors may leave its PE.
-- reads: graph_part (one bucket of the exec graph: a reader step of paradise.events.graphread)
-- Within one PE the walk goes from an exec to the previous exec on the PE (ids are consecutive
-- there) until it meets an exec whose critical predecessor is not that previous exec: one that
-- a message released, or the PE's first exec. Only those rows are needed to follow the path.
-- grain: one row per exec that is first on its PE or whose crit_pred is not pe_prev; unordered
--        (the walk, paradise/events/critpath.py, orders them by id).
-- columns:
--   id         (exec id, ordered by pe, t0, t1)
--   crit_pred  (id of the exec whose message released it; -1: the path starts here)
-- merge: client (the buckets' rows united: each exec is in one bucket)
SELECT id, coalesce(crit_pred, -1) AS crit_pred
FROM graph_part
WHERE pe_prev IS NULL OR crit_pred IS DISTINCT FROM pe_prev
