-- events_exec_pe_stats: the PEs that ran execs, with their exec counts and first starts, from which
-- paradise.events.execgraph numbers the execs PE by PE (a PE's first id: the execs on lower PEs)
-- and cuts the ranges of PEs its range steps work on.
-- grain: one row per PE with at least one exec that has an end (per group of files: each PE's
--        files are in one group, and the merge sums and mins across groups anyway).
-- columns:
--   pe     (PE)
--   execs  (count of its execs with an end)
--   pe_t0  (ns, start of its first exec)
-- merge: keys(pe) sum(execs) min(pe_t0)
SELECT pe, count(*) AS execs, min(t0) AS pe_t0
FROM events WHERE kind = 'exec' AND t1 IS NOT NULL GROUP BY pe
