-- report_window_execs: the running intervals drawn on the report's timeline (the `running` view,
-- events_running.sql: an execution that suspended is drawn as its pieces, never over the time it
-- waited): those overlapping the window [$w0, $w1], clipped to it, earliest first, at most
-- $max_rows of them (the page stays small).
-- grain: one row per running interval overlapping the window
-- columns:
--   kind    string    exec | piece | phase | collective (as in events_running.sql)
--   pe      int32     PE or rank
--   t0, t1  int64 ns  start and end, clipped to the window
--   start   int64 ns  start before clipping (the order of the rows)
--   name    string    entry method / op / kernel / phase / collective name
--   coll    string    collection (chare array, process group), null if none
--   cat     string    source category, null if none
--   stream  int32     device stream (kernels), null on CPU rows
--   tid     int64     thread id, null when the tracer records none
-- merge: client (needs all files at once: the first $max_rows rows in start order)
SELECT kind, pe, greatest(t0, $w0) AS t0, least(t1, $w1) AS t1, t0 AS start, name, coll, cat, stream, tid
FROM running
WHERE t1 >= $w0 AND t0 <= $w1
ORDER BY t0, pe, t1
LIMIT $max_rows
