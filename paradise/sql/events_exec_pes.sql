-- events_exec_pes: the PEs that ran execs, with what numbering the execs PE by PE needs.
-- The first step of the exec graph (paradise.events.execgraph), kept as table exec_graph_pes.
-- grain: one row per PE with at least one exec that has an end.
-- columns:
--   pe     (PE)
--   execs  (count of its execs with an end)
--   off    (count of such execs on lower PEs: the id of this PE's first exec)
--   pe_t0  (ns, start of its first exec)
-- merge: client
SELECT pe, count(*) AS execs,
       CAST(coalesce(sum(count(*)) OVER (ORDER BY pe ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
            AS BIGINT) AS off,
       min(t0) AS pe_t0
FROM events WHERE kind = 'exec' AND t1 IS NOT NULL GROUP BY pe
