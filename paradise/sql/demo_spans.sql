-- demo_spans: the run's makespan and the span of its iterations, for `paradise demo`'s closing
-- table.
-- grain: one row for the whole trace.
-- columns:
--   t_first       int64 ns  earliest exec start
--   t_last        int64 ns  latest exec end
--   step_first    int64 ns  earliest start of an exec with a step
--   step_last     int64 ns  latest end of an exec with a step
-- merge: min(t_first, step_first) max(t_last, step_last)
SELECT min(t0) AS t_first, max(t1) AS t_last,
       min(t0) FILTER (WHERE step IS NOT NULL) AS step_first,
       max(t1) FILTER (WHERE step IS NOT NULL) AS step_last
FROM events
WHERE kind = 'exec'
