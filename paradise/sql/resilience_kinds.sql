-- resilience_kinds: per-rank totals of training steps, checkpoint stalls, restores, failures, restarts.
-- grain: one row per kind x name x pe, for kinds step, checkpoint, restore, failure, restart.
-- columns:
--   kind        (event kind)
--   name        (event name: checkpoint 'periodic' / 'jit' / 'periodic_async', failure exception type, ...)
--   pe          (rank)
--   n           (count of rows)
--   dur_ns      (ns, sum of t1 - t0 over rows with an end; instants add 0)
--   dur_max_ns  (ns, longest row; null when all rows are instants)
--   dur_med_ns  (ns, median row duration; null when all rows are instants)
--   t_first     (ns, earliest t0)
--   t_last      (ns, latest end: t1, or t0 for instants)
--   step_min    (iteration, smallest step number seen; null when none)
--   step_max    (iteration, largest step number seen; null when none)
-- merge: keys(kind, name, pe) sum(n, dur_ns) max(dur_max_ns, dur_med_ns, t_last, step_max) min(t_first, step_min)
-- note: dur_med_ns merged by max is exact when one task holds all files of a PE; tracers write one
-- file per PE, so per-file tasks keep it exact.
SELECT CAST(kind AS VARCHAR) AS kind,
       coalesce(CAST(name AS VARCHAR), '') AS name,
       pe,
       count(*) AS n,
       sum(coalesce(t1 - t0, 0)) AS dur_ns,
       max(t1 - t0) AS dur_max_ns,
       CAST(median(t1 - t0) AS BIGINT) AS dur_med_ns,
       min(t0) AS t_first,
       max(coalesce(t1, t0)) AS t_last,
       min(step) AS step_min,
       max(step) AS step_max
FROM training_rows
WHERE kind IN ('step', 'checkpoint', 'restore', 'failure', 'restart')
GROUP BY ALL
ORDER BY kind, name, pe
