-- events_exec_sends: every send row of the PEs $lo..$hi, with the exec that sent it and its bucket.
-- A range step of the exec graph (paradise.events.partitions), written to the bucket files with the
-- range's execs (a send and its sending exec share a PE, so the ASOF join below stays within the
-- range). A message with several send rows keeps them all here; its bucket step takes the earliest.
-- reads: events, part_execs (events_exec_rows of the same range)
-- grain: one row per send event with a message, on a PE in $lo..$hi.
-- columns:
--   msg            (message id)
--   src_pe, send_t0, bytes (PE, time and payload of this send row)
--   src_id, send_offset_ns (as in scheduling_exec_graph, for this send row)
--   bucket         (hash(msg) mod $buckets, as in events_exec_rows)
-- params: $lo, $hi (the range of PEs, inclusive), $buckets (the bucket count)
-- The sending exec: the sender object's latest exec that started before the send, when the send
-- lies within its active time (exact even when another exec starts at the same instant); else (a
-- coroutine that sent after being resumed) the latest exec on the sending PE, when still running.
-- sp: per send, the PE's latest exec before it (one ASOF join) and whether it is the sender
-- object's, which it nearly always is; only the other sends (nested or resumed execs) search that
-- object's execs (m, xm, mo), so the execs are sorted for one ASOF join, not two. mo is keyed by
-- the send row's values (msg, PE, time, object): rows equal in all of them find the same exec.
-- merge: client
WITH x AS (
    SELECT id, pe, t0, t1, cost_ns, coll, obj FROM part_execs
),
s AS (
    SELECT msg, pe AS src_pe, t0 AS send_t0, bytes, coll, obj
    FROM events WHERE kind = 'send' AND msg IS NOT NULL AND pe BETWEEN $lo AND $hi
),
sp AS (
    SELECT s.*, x.id AS p_id, x.t0 AS p_t0, x.t1 AS p_t1, x.cost_ns AS p_cost,
           coalesce(x.coll = s.coll AND x.obj = s.obj, false) AS same_obj
    FROM s ASOF LEFT JOIN x ON s.src_pe = x.pe AND s.send_t0 >= x.t0
),
m AS (SELECT DISTINCT msg, src_pe, coll, obj, send_t0 FROM sp WHERE NOT same_obj),
xm AS (SELECT pe, coll, obj, t0, cost_ns, id FROM x WHERE (pe, coll, obj) IN (SELECT src_pe, coll, obj FROM m)),
mo AS (
    SELECT m.msg, m.src_pe, m.coll, m.obj, m.send_t0, CASE WHEN m.send_t0 - xm.t0 <= xm.cost_ns THEN xm.id END AS id, xm.t0 AS x_t0
    FROM m ASOF LEFT JOIN xm ON m.src_pe = xm.pe AND m.coll = xm.coll AND m.obj = xm.obj AND m.send_t0 >= xm.t0
),
so AS (
    SELECT sp.msg, sp.src_pe, sp.send_t0, sp.bytes, sp.p_t0,
           CASE WHEN sp.same_obj AND sp.send_t0 - sp.p_t0 <= sp.p_cost THEN sp.p_id ELSE mo.id END AS o_id,
           CASE WHEN sp.same_obj THEN sp.p_t0 ELSE mo.x_t0 END AS o_t0,
           CASE WHEN sp.send_t0 <= sp.p_t1 THEN sp.p_id END AS pe_id
    FROM sp LEFT JOIN mo ON sp.msg = mo.msg AND sp.src_pe = mo.src_pe AND sp.send_t0 = mo.send_t0
                        AND sp.coll IS NOT DISTINCT FROM mo.coll AND sp.obj IS NOT DISTINCT FROM mo.obj
)
SELECT msg, src_pe, send_t0, bytes, coalesce(o_id, pe_id) AS src_id,
       send_t0 - CASE WHEN o_id IS NOT NULL THEN o_t0 ELSE p_t0 END AS send_offset_ns,
       CAST(hash(msg) % $buckets AS INTEGER) AS bucket
FROM so
