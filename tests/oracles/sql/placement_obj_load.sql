-- placement_obj_load: the load of each object, per PE it ran on and per step.
-- grain: one row per coll x obj x index x pe x step (step -1 where unknown).
-- columns:
--   coll      (collection, e.g. 'Cell#0')
--   obj       (packed object index)
--   index     (index as JSON list text, e.g. '[3,4]')
--   pe        (PE the executions ran on)
--   step      (iteration number, -1 when the trace has none)
--   load_ns   (ns, sum of `active`, or t1 - t0 where active is null)
--   execs     (count of exec rows)
--   first_t0  (ns, earliest exec start)
--   last_t1   (ns, latest exec end)
-- merge: keys(coll, obj, index, pe, step) sum(load_ns, execs) min(first_t0) max(last_t1)
SELECT coll, obj, index, pe,
       coalesce(step, -1) AS step,
       CAST(sum(coalesce(active, t1 - t0)) AS BIGINT) AS load_ns,
       count(*) AS execs,
       min(t0) AS first_t0,
       max(t1) AS last_t1
FROM events
WHERE kind = 'exec' AND coll IS NOT NULL AND t1 IS NOT NULL
GROUP BY coll, obj, index, pe, coalesce(step, -1)
ORDER BY coll, obj, pe, step
