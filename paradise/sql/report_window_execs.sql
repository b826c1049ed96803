-- report_window_execs: the executions drawn on the report's timeline: those overlapping the
-- window [$w0, $w1], earliest first, at most $max_rows of them (the page stays small).
-- grain: one row per exec row overlapping the window
-- columns:
--   pe      int32     PE or rank
--   t0, t1  int64 ns  start and end
--   name    string    entry method / op / kernel name
--   coll    string    collection (chare array, process group), null if none
--   cat     string    source category, null if none
--   stream  int32     device stream (kernels), null on CPU rows
--   tid     int64     thread id, null when the tracer records none
-- merge: client (needs all files at once: the first $max_rows rows in t0 order)
SELECT pe, t0, t1, name, coll, cat, stream, tid
FROM events
WHERE kind = 'exec' AND t1 >= $w0 AND t0 <= $w1
ORDER BY t0, pe
LIMIT $max_rows
