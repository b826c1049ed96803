-- events_object_bucket_split: a split step's rows of events_object_step_parts as it writes them
-- to the object-hash buckets (paradise.events.objbuckets, the Dask engine's object steps).
-- reads: object_step_split (events_object_step_parts over the step's files)
-- params: $buckets (the bucket count)
-- grain: one row per collection x index x step in the step's files (as events_object_step_parts)
-- columns:
--   coll, index, step, load_ns, execs (as in events_object_step_parts)
--   last_t1   (ns, `last` >> 32: the end of the latest exec; Parquet does not keep a HUGEINT exactly)
--   last_pe   (`last` & (2^32 - 1): the PE of that exec)
--   bucket    (hash of (coll, index) modulo $buckets: every row of an object in one bucket)
-- merge: client (written to the bucket files; events_object_bucket_parts merges a bucket's files)
SELECT coll, index, step, load_ns, execs, CAST(last >> 32 AS BIGINT) AS last_t1,
       CAST(last & 4294967295 AS BIGINT) AS last_pe, CAST(hash(coll, index) % $buckets AS INTEGER) AS bucket
FROM object_step_split
