-- events_exec_rows: the execs of the PEs $lo..$hi, numbered, with their predecessor on their PE.
-- A step of the exec graph (paradise.events.execgraph), appended to table exec_graph_execs one
-- range of PEs at a time, so that each sort holds one range (at 10^8 rows under 2 GiB: no spill).
-- reads: events, exec_graph_pes (events_exec_pes)
-- grain: one row per exec event with an end, on a PE in $lo..$hi.
-- columns:
--   id          (0-based exec number, ordered by pe, t0, t1: rank on its PE plus exec_graph_pes.off)
--   pe, t0, t1, cost_ns, coll, obj, index, name, step, prio, msg (as in scheduling_exec_graph)
--   pe_prev, pe_prev_t1, pe_prev_end (as in scheduling_exec_graph)
-- params: $lo, $hi (the range of PEs, inclusive)
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
       CASE WHEN xl.rank > 0 THEN xl.rank + p.off - 1 END AS pe_prev, pe_prev_t1, pe_prev_end
FROM xl JOIN exec_graph_pes p ON xl.pe = p.pe
