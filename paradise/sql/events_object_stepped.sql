-- events_object_stepped: whether any exec with a step carries load (placement reads per-step loads
-- only then).
-- reads: object_steps (events_object_steps, materialized by paradise.events.objloads)
-- grain: one row for the whole run.
-- columns:
--   stepped   (bool: the loads of rows with step >= 0 sum to more than 0)
-- merge: client
SELECT coalesce(sum(load_ns) FILTER (WHERE step >= 0), 0) > 0 AS stepped
FROM object_steps
