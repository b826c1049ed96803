-- exec_graph (test oracle): the exec graph of paradise/sql/scheduling_exec_graph.sql in one query,
-- over every PE at once, which paradise.events.execgraph builds a range of PEs at a time.
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
-- merge: client
-- x: execs numbered in (pe, t0, t1) order, with their PE predecessor from the same sort. The sort
-- is per PE (xl, a window partitioned by pe: partitions sort apart and in parallel, no global sort),
-- and an exec's id is its rank on its PE plus the count of execs on lower PEs (base).
WITH base AS (
    SELECT pe, CAST(coalesce(sum(count(*)) OVER (ORDER BY pe ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
                    AS BIGINT) AS off,
           min(t0) AS pe_t0
    FROM events WHERE kind = 'exec' AND t1 IS NOT NULL GROUP BY pe
),
xl AS (
    SELECT row_number() OVER w - 1 AS rank,
           pe, t0, t1, coalesce(active, t1 - t0) AS cost_ns,
           coll, obj, index, name, step, prio, msg,
           lag(t0 + coalesce(active, t1 - t0)) OVER w AS prev_t1,
           lag(t1) OVER w AS prev_end
    FROM events WHERE kind = 'exec' AND t1 IS NOT NULL
    WINDOW w AS (PARTITION BY pe ORDER BY t0, t1)
),
x AS (
    SELECT xl.rank + base.off AS id, xl.pe, t0, t1, cost_ns, coll, obj, index, name, step, prio, msg,
           xl.rank > 0 AS has_prev, prev_t1, prev_end
    FROM xl JOIN base ON xl.pe = base.pe
),
-- s: one row per message, its earliest send. Most messages have one send row: only those with
-- several (multi) are reduced with arg_min, so there is no aggregate over every message.
sr AS NOT MATERIALIZED (
    SELECT msg, pe, t0, bytes, coll, obj FROM events WHERE kind = 'send' AND msg IS NOT NULL
),
multi AS (SELECT msg FROM sr GROUP BY msg HAVING count(*) > 1),
s AS (
    SELECT msg, pe AS src_pe, t0 AS send_t0, bytes, coll, obj FROM sr ANTI JOIN multi USING (msg)
    UNION ALL
    SELECT msg, arg_min(pe, t0), min(t0), max(bytes), arg_min(coll, t0), arg_min(obj, t0)
    FROM sr SEMI JOIN multi USING (msg) GROUP BY msg
),
-- The sending exec: the sender object's latest exec that started before the send, when the send
-- lies within its active time (exact even when another exec starts at the same instant); else (a
-- coroutine that sent after being resumed) the latest exec on the sending PE, when still running.
-- sp: per send, the PE's latest exec before it (one ASOF join) and whether it is the sender
-- object's, which it nearly always is; only the other sends (nested or resumed execs) search that
-- object's execs (m, xm, mo), so the full trace is sorted for one ASOF join, not two.
sp AS (
    SELECT s.*, x.id AS p_id, x.t0 AS p_t0, x.t1 AS p_t1, x.cost_ns AS p_cost,
           coalesce(x.coll = s.coll AND x.obj = s.obj, false) AS same_obj
    FROM s ASOF LEFT JOIN x ON s.src_pe = x.pe AND s.send_t0 >= x.t0
),
m AS (SELECT msg, src_pe, coll, obj, send_t0 FROM sp WHERE NOT same_obj),
xm AS (SELECT pe, coll, obj, t0, cost_ns, id FROM x WHERE (pe, coll, obj) IN (SELECT src_pe, coll, obj FROM m)),
mo AS (
    SELECT m.msg, CASE WHEN m.send_t0 - xm.t0 <= xm.cost_ns THEN xm.id END AS id, xm.t0 AS x_t0
    FROM m ASOF LEFT JOIN xm ON m.src_pe = xm.pe AND m.coll = xm.coll AND m.obj = xm.obj AND m.send_t0 >= xm.t0
),
so AS (
    SELECT sp.msg, sp.src_pe, sp.send_t0, sp.bytes, sp.p_t0,
           CASE WHEN sp.same_obj AND sp.send_t0 - sp.p_t0 <= sp.p_cost THEN sp.p_id ELSE mo.id END AS o_id,
           CASE WHEN sp.same_obj THEN sp.p_t0 ELSE mo.x_t0 END AS o_t0,
           CASE WHEN sp.send_t0 <= sp.p_t1 THEN sp.p_id END AS pe_id
    FROM sp LEFT JOIN mo ON sp.msg = mo.msg
),
sx AS (
    SELECT msg, src_pe, send_t0, bytes, coalesce(o_id, pe_id) AS src_id,
           send_t0 - CASE WHEN o_id IS NOT NULL THEN o_t0 ELSE p_t0 END AS send_offset_ns
    FROM so
),
w AS (
    SELECT x.* EXCLUDE (has_prev, prev_t1, prev_end),
           CASE WHEN has_prev THEN id - 1 END AS pe_prev,
           CASE WHEN has_prev THEN prev_t1 END AS pe_prev_t1,
           CASE WHEN has_prev THEN prev_end END AS pe_prev_end,
           (SELECT min(pe_t0) FROM base) AS run_t0
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
