-- events_object_ranks: the global object ids of a bucketed run: the rank of (coll, index) over
-- every bucket's objects (each object is in one bucket), as events_object_steps numbers them.
-- reads: bucket_objects (events_object_bucket_objects of every bucket, with its bucket number)
-- grain: one row per object
-- columns:
--   bucket   (the object's bucket)
--   local    (its id in the bucket)
--   oid      (its global id: dense rank of (coll, index) in text order, from 0)
-- merge: client (ranks every object of the trace)
SELECT bucket, local, CAST(dense_rank() OVER (ORDER BY coll, index) - 1 AS BIGINT) AS oid
FROM bucket_objects
