-- events_object_step_parts: each object's execs per step summed, the part of events_object_steps
-- that reads the events (paradise.events.objloads): an aggregate that splits by files.
-- reads: events
-- grain: one row per collection x index x step (step -1: execs without a step) in the files read;
--        merged: in the trace.
-- columns:
--   coll, index (the object's collection and index text; index null for a collection's execs
--                without one)
--   step        (iteration, -1 for none)
--   load_ns     (ns, sum of `active` or t1 - t0 over the object's execs in the step, all PEs)
--   execs       (count of those execs)
--   last        (t1 and pe of the latest of them in one number, t1 * 2^32 + pe (PEs are
--                0 .. 2^31 - 1), so that one max orders by t1, then PE)
-- merge: group by coll, index, step; sum(load_ns, execs) max(last)
SELECT coll, index, coalesce(step, -1) AS step,
       CAST(sum(coalesce(active, t1 - t0)) AS BIGINT) AS load_ns, count(*) AS execs,
       max((CAST(t1 AS HUGEINT) << 32) + pe) AS last
FROM events
WHERE kind = 'exec' AND coll IS NOT NULL AND t1 IS NOT NULL
GROUP BY coll, index, coalesce(step, -1)
