-- events_object_step_rows: the object_steps rows of objects, read only when some object's latest
-- end is tied between two of its rows (placement then decides its PE from them).
-- reads: object_steps (events_object_steps, materialized by paradise.events.objloads)
-- grain: one row per object (oid) and step, in (oid, step) order.
-- columns:
--   oid       (object id)
--   pe        (PE the object's execs of that step ran on)
--   step      (iteration, or the value events_object_steps gives execs without one)
--   load_ns   (ns of the object's execs in that step)
--   execs     (how many)
--   last_t1   (ns, their latest end)
-- merge: client
SELECT oid, pe, step, load_ns, execs, last_t1
FROM object_steps
WHERE oid IS NOT NULL
ORDER BY oid, step
