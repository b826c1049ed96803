-- placement_pe_load: how busy each PE was (entry-method executions only).
-- grain: one row per pe.
-- columns:
--   pe       (PE number)
--   busy_ns  (ns, sum over exec rows of `active`, or t1 - t0 where active is null)
--   execs    (count of exec rows)
--   t_min    (ns, earliest exec start)
--   t_max    (ns, latest exec end)
-- merge: keys(pe) sum(busy_ns, execs) min(t_min) max(t_max)
SELECT pe,
       CAST(sum(coalesce(active, t1 - t0)) AS BIGINT) AS busy_ns,
       count(*) AS execs,
       min(t0) AS t_min,
       max(t1) AS t_max
FROM events
WHERE kind = 'exec' AND t1 IS NOT NULL
GROUP BY pe
ORDER BY pe
