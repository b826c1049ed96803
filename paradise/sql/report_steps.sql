-- report_steps: each step's extent over all PEs, to choose the report's default timeline window.
-- grain: one row per step
-- columns:
--   step    int32     iteration number
--   t0      int64 ns  earliest start of the step on any PE
--   t1      int64 ns  latest end of the step on any PE
-- merge: keys(step) min(t0) max(t1)
SELECT step, min(t0) AS t0, max(t1) AS t1
FROM events
WHERE kind = 'step' AND step IS NOT NULL AND t1 IS NOT NULL
GROUP BY step
ORDER BY step
