-- overview_top_entries: stage 2 of the overview, its top_entries section: exec time per entry
-- method / op, heaviest first (the analysis keeps the first --top rows and adds mean and share).
-- reads: overview_groups (the rows of overview_pe, the session's shared result; never the trace)
-- grain: one row per name × coll × cat of the exec rows
-- columns:
--   name      string       entry method / op name
--   coll      string       object collection, null if none
--   cat       string       source category, null if none
--   count     int64 count  exec rows
--   total_ns  int64 ns     their summed time (0 when none has one)
--   max_ns    int64 ns     the longest one
-- merge: client (a roll-up of overview_pe's merged rows)
SELECT name, coll, cat, sum(rows)::BIGINT AS count, coalesce(sum(dur_ns), 0)::BIGINT AS total_ns,
       max(max_ns) AS max_ns
FROM overview_groups WHERE kind = 'exec' GROUP BY name, coll, cat
ORDER BY total_ns DESC, name NULLS LAST, coll NULLS LAST, cat NULLS LAST
