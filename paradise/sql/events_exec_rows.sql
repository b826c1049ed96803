-- events_exec_rows: the execs of the PEs $lo..$hi as the files hold them, for a range step of the
-- exec graph (paradise.events.partitions): paradise.events.rangerows numbers them over this order
-- (each PE's rows in time order, docs/trace-format.md "Row order") instead of sorting them.
-- reads: events
-- grain: one row per exec event with an end or a message, on a PE in $lo..$hi, in the files' row order
--        (DuckDB keeps the scan's order; rangerows sorts the range when rows leave (pe, t0, t1) order).
--        An exec without an end is no node of the graph; one with a message is kept for the message
--        edges (communication_edges), which count every delivery.
-- columns:
--   pe, t0, t1, coll, obj, index, name, step, prio, msg (as in the exec graph)
--   cat         (the exec's category: communication_edges' dst_cat)
--   cost_ns     (ns, `active` or t1 - t0)
-- params: $lo, $hi (the range of PEs, inclusive)
-- merge: client
SELECT pe, t0, t1, coalesce(active, t1 - t0) AS cost_ns, coll, obj, index, name, step, prio, msg, cat
FROM events WHERE kind = 'exec' AND (t1 IS NOT NULL OR msg IS NOT NULL) AND pe BETWEEN $lo AND $hi
