-- events_object_step_loads: the step loads of the objects in the object_steps table
-- (events_object_steps, materialized by paradise.events.objloads), as the step matrix reads them.
-- reads: object_steps
-- grain: one row per object (oid) and step >= 0.
-- columns:
--   oid       (object id, 32-bit)
--   step      (iteration)
--   load_ns   (ns, as a double: the matrix's type)
-- note: streamed in record batches into the matrix; rows come unordered.
-- merge: client
SELECT CAST(oid AS INTEGER) AS oid, step, CAST(load_ns AS DOUBLE) AS load_ns
FROM object_steps WHERE oid IS NOT NULL AND step >= 0
