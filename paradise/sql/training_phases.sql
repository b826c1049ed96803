-- training_phases: time per named phase per rank (forward, loss, backward, optimizer, and any
-- phase the program marks with tracers.torch.phase()).
-- grain: one row per (pe, name).
-- columns:
--   pe       int32        global rank
--   name     text         phase name
--   calls    int64 count  phase rows
--   dur_ns   int64 ns     sum of t1 - t0
--   max_ns   int64 ns     longest
-- merge: keys(pe, name) sum(calls, dur_ns) max(max_ns)
SELECT pe, name, count(*) AS calls,
       CAST(sum(t1 - t0) AS BIGINT) AS dur_ns,
       max(t1 - t0) AS max_ns
FROM training_rows
WHERE kind = 'phase' AND t1 IS NOT NULL
GROUP BY pe, name
ORDER BY pe, name
