-- report_window_msgs: the messages drawn on the report's timeline as lines from the send to
-- the execution it caused, where either end lies in the window [$w0, $w1] and the other at most
-- one window width outside it; at most $max_rows, earliest send first.
-- grain: one row per (send, exec) pair linked by msg
-- columns:
--   src_pe  int32     sending PE
--   t_send  int64 ns  send time
--   dst_pe  int32     PE of the execution the message caused
--   t_exec  int64 ns  start of that execution
-- merge: client (needs all files at once: a join of sends on one PE with execs on another)
WITH s AS (
    SELECT pe, t0, msg FROM events
    WHERE kind = 'send' AND msg IS NOT NULL AND t0 BETWEEN 2 * $w0::BIGINT - $w1 AND $w1
),
e AS (
    SELECT pe, t0, msg FROM events
    WHERE kind = 'exec' AND msg IS NOT NULL AND t0 BETWEEN $w0 AND 2 * $w1::BIGINT - $w0
)
SELECT s.pe AS src_pe, s.t0 AS t_send, e.pe AS dst_pe, e.t0 AS t_exec
FROM s JOIN e ON e.msg = s.msg
WHERE s.t0 >= $w0 OR e.t0 <= $w1
ORDER BY s.t0, s.pe, e.pe
LIMIT $max_rows
