-- whatif_replay_graph: the exec graph as the what-if replay reads it (paradise.whatif), with
-- obj_prev: the previous exec of the same object and entry method (null for the first, or
-- outside objects). An object's invocations of one entry keep their order in a replay, while
-- different entries may be reordered by message priorities. Only the replay needs it, so it is
-- computed here, on traces small enough to replay (whatif.REPLAY_MAX_EXECS).
-- reads: exec_graph (the rows of scheduling_exec_graph, kept by paradise.events.execgraph)
-- grain: one row per exec, ordered by id.
-- columns: those of scheduling_exec_graph (id, pe, t0, t1, cost_ns, coll, obj, index, name, step,
--   prio, pe_prev, pe_prev_t1, pe_prev_end, src_id, src_pe, send_t0, send_offset_ns, bytes,
--   crit_pred, wait_msg_ns), and
--   obj_prev   (id of the previous exec of the same coll, obj and name by t0, t1; null for the
--               first and for execs outside objects)
-- merge: client
SELECT *,
       CASE WHEN coll IS NOT NULL THEN lag(id) OVER (PARTITION BY coll, obj, name ORDER BY t0, t1) END AS obj_prev
FROM exec_graph
ORDER BY id
