-- events_object_bucket_parts: one bucket's split rows merged by events_object_step_parts' merge rule,
-- the object_step_parts that events_object_steps reads in a bucket step (paradise.events.objbuckets).
-- reads: bucket_part_files (the bucket's files of events_object_bucket_split rows, every split step's)
-- grain: one row per collection x index x step of the bucket's objects
-- columns:
--   coll, index, step (as in events_object_step_parts)
--   load_ns   (ns, summed over the split steps)
--   execs     (summed over the split steps)
--   last      (t1 * 2^32 + pe of the latest exec, the greatest over the split steps)
-- merge: client (a bucket holds every row of its objects)
SELECT coll, index, step, CAST(sum(load_ns) AS BIGINT) AS load_ns, CAST(sum(execs) AS BIGINT) AS execs,
       max((CAST(last_t1 AS HUGEINT) << 32) + last_pe) AS last
FROM bucket_part_files
GROUP BY coll, index, step
