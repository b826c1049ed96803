-- overview_collectives: stage 2 of the overview, its collectives section: collective calls per
-- name and rank.
-- reads: overview_groups (the rows of overview_pe, the session's shared result; never the trace)
-- grain: one row per name × pe of the collective rows
-- columns:
--   name      string       collective name
--   pe        int32        PE or global rank
--   count     int64 count  collective rows
--   bytes     int64 bytes  their bytes (0 when none has bytes)
--   total_ns  int64 ns     their summed time (0 when none has one)
--   max_ns    int64 ns     the longest one
-- merge: client (a roll-up of overview_pe's merged rows)
SELECT name, pe, sum(rows)::BIGINT AS count, coalesce(sum(bytes), 0)::BIGINT AS bytes,
       coalesce(sum(dur_ns), 0)::BIGINT AS total_ns, max(max_ns) AS max_ns
FROM overview_groups WHERE kind = 'collective' GROUP BY name, pe ORDER BY name NULLS LAST, pe NULLS LAST
