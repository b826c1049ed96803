-- events_exec_rows: the execs of the PEs $lo..$hi, numbered, with their predecessor on their PE and
-- the bucket their message's send lands in.
-- A range step of the exec graph (paradise.events.partitions): kept as the step's table part_execs,
-- then written to its bucket files, so that each sort holds one range (at 10^8 rows under 2 GiB:
-- no spill).
-- reads: events, exec_graph_pes (the step's table of events_exec_pe_stats, with each PE's first id)
-- grain: one row per exec event with an end, on a PE in $lo..$hi.
-- columns:
--   id          (0-based exec number, ordered by pe, t0, t1: rank on its PE plus exec_graph_pes.off)
--   pe, t0, t1, cost_ns, coll, obj, index, name, step, prio, msg (as in scheduling_exec_graph)
--   pe_prev, pe_prev_t1, pe_prev_end (as in scheduling_exec_graph)
--   bucket      (hash(msg) mod $buckets: where its message's send rows go too; id mod $buckets
--                for an exec without a message, which joins no send)
-- params: $lo, $hi (the range of PEs, inclusive), $buckets (the bucket count)
-- merge: client
WITH xl AS (
    SELECT row_number() OVER w - 1 AS rank,
           pe, t0, t1, coalesce(active, t1 - t0) AS cost_ns,
           coll, obj, index, name, step, prio, msg,
           lag(t0 + coalesce(active, t1 - t0)) OVER w AS pe_prev_t1,
           lag(t1) OVER w AS pe_prev_end
    FROM events WHERE kind = 'exec' AND t1 IS NOT NULL AND pe BETWEEN $lo AND $hi
    WINDOW w AS (PARTITION BY pe ORDER BY t0, t1)
)
SELECT xl.rank + p.off AS id, xl.pe, t0, t1, cost_ns, coll, obj, index, name, step, prio, msg,
       CASE WHEN xl.rank > 0 THEN xl.rank + p.off - 1 END AS pe_prev, pe_prev_t1, pe_prev_end,
       CAST(CASE WHEN msg IS NULL THEN (xl.rank + p.off) % $buckets ELSE hash(msg) % $buckets END AS INTEGER)
           AS bucket
FROM xl JOIN exec_graph_pes p ON xl.pe = p.pe
