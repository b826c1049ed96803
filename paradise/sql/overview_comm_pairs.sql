-- overview_comm_pairs: stage 2 of the overview, its comm_matrix section: point-to-point volume per
-- sending PE and receiving PE, heaviest first (the analysis keeps the first COMM_MATRIX_MAX_EDGES).
-- reads: overview_groups (the rows of overview_pe, the session's shared result; never the trace)
-- grain: one row per pe × peer_pe of the send rows
-- columns:
--   pe        int32        sending PE
--   peer_pe   int32        receiving PE (null when unknown)
--   messages  int64 count  send rows
--   bytes     int64 bytes  their bytes (0 when none has bytes)
-- merge: client (a roll-up of overview_pe's merged rows)
SELECT pe, peer_pe, sum(rows)::BIGINT AS messages, coalesce(sum(bytes), 0)::BIGINT AS bytes
FROM overview_groups WHERE kind = 'send' GROUP BY pe, peer_pe
ORDER BY bytes DESC, pe NULLS LAST, peer_pe NULLS LAST
