-- scheduling_exec_graph: every execution with what it waited for (the exec DAG of the run).
-- grain: one row per exec event (event level: this is message matching, not a reduction).
-- columns:
--   id          (0-based exec number, ordered by pe, t0, t1)
--   pe          (PE it ran on)
--   t0, t1      (ns, start and end)
--   cost_ns     (ns, `active` or t1 - t0: the time it really computed)
--   coll, obj, index, name, step, prio (identity, entry method, iteration, message priority)
--   pe_prev     (id of the previous exec on the same PE, null for the first)
--   pe_prev_t1  (ns, end of that exec's active time: t0 + cost_ns, so a suspended coroutine
--                does not hide the execs that ran while it waited)
--   pe_prev_end (ns, wall end t1 of that exec: the latency fit's test of an idle receiver)
--   src_id      (id of the exec that sent the message causing this one, null when unknown)
--   src_pe      (PE of the send)
--   send_t0     (ns, time of the send)
--   send_offset_ns (ns, send_t0 - start of the sending exec)
--   bytes       (bytes of the causing message)
--   crit_pred   (id of the binding predecessor: the sender when its message came after the PE
--                was free, else pe_prev; the critical path follows it backwards)
--   wait_msg_ns (ns, idle time on this PE before this exec spent waiting for its message: since the
--                previous exec on the PE, or since the run's first exec for the PE's first)
-- note: event level (message matching with an ASOF join across PEs); not splittable by files.
-- Rows come unordered: the event layer keeps them as a table (paradise.events.execgraph) and
-- readers order by id where they need to.
-- merge: client
WITH x AS (
    SELECT row_number() OVER (ORDER BY pe, t0, t1) - 1 AS id,
           pe, t0, t1, coalesce(active, t1 - t0) AS cost_ns,
           coll, obj, index, name, step, prio, msg
    FROM events WHERE kind = 'exec' AND t1 IS NOT NULL
),
s AS (
    SELECT msg, arg_min(pe, t0) AS src_pe, min(t0) AS send_t0, max(bytes) AS bytes,
           arg_min(coll, t0) AS coll, arg_min(obj, t0) AS obj
    FROM events WHERE kind = 'send' AND msg IS NOT NULL GROUP BY msg
),
-- the sending exec: the sender object's exec when the send lies within its active time (exact
-- even when another exec starts at the same instant); else (a coroutine that sent after being
-- resumed) the latest exec on the sending PE that started before the send and was still running
s_obj AS (
    SELECT s.msg, CASE WHEN s.send_t0 - x.t0 <= x.cost_ns THEN x.id END AS id, x.t0 AS x_t0
    FROM s ASOF LEFT JOIN x ON s.src_pe = x.pe AND s.coll = x.coll AND s.obj = x.obj AND s.send_t0 >= x.t0
),
s_pe AS (
    SELECT s.msg, CASE WHEN s.send_t0 <= x.t1 THEN x.id END AS id, x.t0 AS x_t0
    FROM s ASOF LEFT JOIN x ON s.src_pe = x.pe AND s.send_t0 >= x.t0
),
sx AS (
    SELECT s.msg, s.src_pe, s.send_t0, s.bytes,
           coalesce(o.id, p.id) AS src_id,
           s.send_t0 - CASE WHEN o.id IS NOT NULL THEN o.x_t0 ELSE p.x_t0 END AS send_offset_ns
    FROM s LEFT JOIN s_obj o ON s.msg = o.msg LEFT JOIN s_pe p ON s.msg = p.msg
),
w AS (
    SELECT x.*,
           lag(id) OVER (PARTITION BY pe ORDER BY t0, t1) AS pe_prev,
           lag(t0 + cost_ns) OVER (PARTITION BY pe ORDER BY t0, t1) AS pe_prev_t1,
           lag(t1) OVER (PARTITION BY pe ORDER BY t0, t1) AS pe_prev_end,
           min(t0) OVER () AS run_t0
    FROM x
)
SELECT w.id, w.pe, w.t0, w.t1, w.cost_ns, w.coll, w.obj, w.index, w.name, w.step, w.prio,
       w.pe_prev, w.pe_prev_t1, w.pe_prev_end,
       sx.src_id, sx.src_pe, sx.send_t0, sx.send_offset_ns, sx.bytes,
       CASE WHEN sx.src_id IS NOT NULL AND sx.src_id <> w.id
                 AND (w.pe_prev IS NULL OR sx.send_t0 > w.pe_prev_t1) THEN sx.src_id
            ELSE w.pe_prev END AS crit_pred,
       CASE WHEN sx.src_id IS NOT NULL AND (w.pe_prev IS NULL OR sx.send_t0 > w.pe_prev_t1)
            THEN greatest(w.t0 - coalesce(w.pe_prev_t1, w.run_t0), 0) ELSE 0 END AS wait_msg_ns
FROM w LEFT JOIN sx ON w.msg = sx.msg
