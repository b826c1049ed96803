-- info_kinds: what `paradise info` says a trace holds, per event kind.
-- grain: one row per event kind present in the trace.
-- columns:
--   kind      string    event kind (exec, send, idle, step, ...)
--   events    int64     rows of that kind
--   t_min     int64 ns  earliest t0 of those rows
--   t_max     int64 ns  latest end (t1, or t0 for instants) of those rows
--   step_min  int32     lowest step number among them (null when none has a step)
--   step_max  int32     highest step number among them
--   pes       int64     distinct PEs with a row of that kind (exact when merged: a PE's files are
--                       never split between partials)
-- merge: keys(kind) sum(events, pes) min(t_min, step_min) max(t_max, step_max)
SELECT kind, count(*) AS events, min(t0) AS t_min, max(coalesce(t1, t0)) AS t_max,
       min(step) AS step_min, max(step) AS step_max, count(DISTINCT pe) AS pes
FROM events
GROUP BY kind
ORDER BY events DESC, kind
