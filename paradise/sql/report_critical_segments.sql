-- report_critical_segments: the critical path's executions inside the report's timeline window
-- [$w0, $w1], as they ran (an execution that suspended: its pieces), clipped to the window, first
-- to last (paradise.report.html.gather: the path the scheduling analysis followed, no second scan).
-- reads: exec_graph (the run's exec graph, shared through the session), running (events_running.sql)
-- params: $lo, $hi (the path's segments as id ranges, each a run of consecutive execs on one PE),
--         $w0, $w1 (the window, ns)
-- grain: one row per running interval of an execution on the path that overlaps the window
-- columns:
--   pe      int32     PE of the execution
--   t0, t1  int64 ns  start and end of the interval, clipped to the window
-- merge: client (needs all files at once: the exec graph spans the trace)
WITH seg AS (SELECT unnest($lo::BIGINT[]) AS lo, unnest($hi::BIGINT[]) AS hi)
SELECT r.pe, greatest(r.t0, $w0) AS t0, least(r.t1, $w1) AS t1
FROM exec_graph g JOIN seg ON g.id BETWEEN seg.lo AND seg.hi
JOIN running r ON r.pe = g.pe AND r.exec_t0 = g.t0 AND r.name IS NOT DISTINCT FROM g.name
AND r.kind IN ('exec', 'piece')
WHERE r.t1 >= $w0 AND r.t0 <= $w1 AND g.t1 >= $w0 AND g.t0 <= $w1 ORDER BY g.id, r.t0
