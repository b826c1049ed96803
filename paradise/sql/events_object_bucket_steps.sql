-- events_object_bucket_steps: one bucket's object steps renumbered with the global object ids,
-- kept as the object_steps table that the object readers (events_object_summary, ...) read.
-- reads: $file (the bucket's events_object_steps rows, object ids local to the bucket), gid (local
--        -> global object id of the bucket's objects, from events_object_ranks)
-- grain: one row per row of the bucket's object steps
-- columns: oid (global object id, null where the local one is), then the other columns of
--   events_object_steps as they are
-- merge: client (each object's rows are in one bucket)
SELECT g.oid, s.* EXCLUDE (oid)
FROM read_parquet($file) s LEFT JOIN gid g ON s.oid = g.local
