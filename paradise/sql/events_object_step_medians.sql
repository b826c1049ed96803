-- events_object_step_medians: per object of the object_steps table, the median of its step loads
-- and the steps it ran in (placement's per-object figures: oid_loads and the windows' clip).
-- reads: object_steps (events_object_steps, or one bucket's: events_object_bucket_steps)
-- grain: one row per object (oid) with a row of step >= 0, in oid order; an object without one
--        has no row (the client reads its median as unknown, NaN, and 0 steps).
-- columns:
--   oid       (object id)
--   med       (ns, as a double: median of load_ns over its steps; of an even count, the mean of
--              the two middle values)
--   ran       (count of its steps >= 0: one row per object and step)
-- merge: client (an object's rows are in one bucket: the buckets' rows are disjoint)
SELECT oid, median(load_ns) AS med, count(*) AS ran
FROM object_steps WHERE oid IS NOT NULL AND step >= 0
GROUP BY oid ORDER BY oid
