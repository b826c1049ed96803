-- events_object_step_numbers: the steps objects ran in, the columns of the step matrix.
-- reads: object_steps (events_object_steps, materialized by paradise.events.objloads)
-- grain: one row per step >= 0 that some object ran in, in step order.
-- columns:
--   step   (iteration)
-- merge: client
SELECT DISTINCT step
FROM object_steps
WHERE oid IS NOT NULL AND step >= 0
ORDER BY step
