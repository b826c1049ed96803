-- overview_per_pe_counts: stage 2 of the overview, the row counts of its per_pe section: each PE's
-- rows, exec rows, sends and bytes sent, summed from the overview's group table.
-- reads: overview_groups (the rows of overview_pe, the session's shared result; a few hundred to a
-- few thousand rows, never the trace)
-- grain: one row per pe
-- columns:
--   pe          int32        PE or global rank (null last)
--   rows        int64 count  rows of every kind
--   exec_rows   int64 count  exec rows
--   sends       int64 count  send rows
--   send_bytes  int64 bytes  bytes of the send rows (0 when none has bytes)
-- merge: client (a roll-up of overview_pe's merged rows)
SELECT pe, sum(rows)::BIGINT AS rows,
       coalesce(sum(rows) FILTER (WHERE kind = 'exec'), 0)::BIGINT AS exec_rows,
       coalesce(sum(rows) FILTER (WHERE kind = 'send'), 0)::BIGINT AS sends,
       coalesce(sum(bytes) FILTER (WHERE kind = 'send'), 0)::BIGINT AS send_bytes
FROM overview_groups GROUP BY pe ORDER BY pe NULLS LAST
