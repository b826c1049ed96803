-- events_object_bucket_objects: the objects of one bucket's object steps (the file a bucket step
-- writes), which the client ranks over every bucket (events_object_ranks).
-- reads: $file (the bucket's events_object_steps rows, object ids local to the bucket)
-- grain: one row per object of the bucket, in local id order
-- columns:
--   local        (object id in the bucket)
--   coll, index  (the object's collection and index text)
-- merge: client (one bucket's objects; the buckets' objects are disjoint)
SELECT DISTINCT oid AS local, coll, index
FROM read_parquet($file)
WHERE oid IS NOT NULL
ORDER BY local
