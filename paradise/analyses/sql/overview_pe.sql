-- overview_pe: per-PE time accounting and message counts from every row, in one scan.
-- grain: one row per pe.
-- columns:
--   pe          int32        PE (Charm) or global rank (PyTorch)
--   rows        int64 count  rows of any kind on the PE
--   t_first     int64 ns     earliest t0 of any row on the PE
--   t_last      int64 ns     latest end of any row (t1, or t0 for instants)
--   exec_rows   int64 count  exec rows (entry methods, ops, kernels)
--   exec_ns     int64 ns     sum of coalesce(active, t1 - t0) over exec rows; equals busy time on a
--                            serial PE (Charm), double-counts nested or concurrent rows (Kineto)
--   idle_rows   int64 count  idle rows
--   idle_ns     int64 ns     sum of t1 - t0 over idle rows
--   sends       int64 count  send rows
--   send_bytes  int64 bytes  sum of bytes over send rows
-- merge: keys(pe) sum(rows, exec_rows, exec_ns, idle_rows, idle_ns, sends, send_bytes) min(t_first) max(t_last)
SELECT
    pe,
    count(*) AS rows,
    min(t0) AS t_first,
    max(coalesce(t1, t0)) AS t_last,
    count(*) FILTER (WHERE kind = 'exec') AS exec_rows,
    coalesce(sum(coalesce(active, t1 - t0)) FILTER (WHERE kind = 'exec'), 0)::BIGINT AS exec_ns,
    count(*) FILTER (WHERE kind = 'idle') AS idle_rows,
    coalesce(sum(t1 - t0) FILTER (WHERE kind = 'idle'), 0)::BIGINT AS idle_ns,
    count(*) FILTER (WHERE kind = 'send') AS sends,
    coalesce(sum(bytes) FILTER (WHERE kind = 'send'), 0)::BIGINT AS send_bytes
FROM events
GROUP BY pe
ORDER BY pe
