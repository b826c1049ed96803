-- events_object_bucket_load: one bucket's part of events_object_stepped: the load of its objects'
-- rows in steps >= 0 (the client adds the buckets' up and compares the sum to 0).
-- reads: object_steps (one bucket's, events_object_bucket_steps)
-- grain: one row per bucket
-- columns:
--   step_load  (ns, sum of load_ns over the bucket's rows of steps >= 0; 0 when none)
-- merge: sum(step_load)
SELECT CAST(coalesce(sum(load_ns) FILTER (WHERE step >= 0), 0) AS BIGINT) AS step_load
FROM object_steps
