-- events_object_steps: object loads per step, one row per object (coll, index) and step, with
-- integer object ids; kept as an engine table (paradise.events.objloads) so that the client
-- fetches integers only, and the object labels once.
-- reads: object_step_parts (the rows of events_object_step_parts, merged over the trace's files)
-- grain: one row per collection x index x step (step -1: execs without a step); the execs of a
--        collection without an index make rows of null index and null oid, no object of the table,
--        which count only for whether the run's steps carry load.
-- columns:
--   oid       (object id: dense rank of (coll, index) in text order, from 0; null without an index)
--   pe        (PE of the object's latest exec in the step: greatest t1, then greatest PE)
--   step      (iteration, -1 for none)
--   load_ns   (ns, sum of `active` or t1 - t0 over the object's execs in the step, all PEs)
--   execs     (count of those execs)
--   last_t1   (ns, end of the latest of them)
--   coll, index (the object's collection and index text)
-- last: t1 and pe in one number (events_object_step_parts; a decimal when merged by Arrow).
-- merge: client (the object ids rank every object of the trace)
-- The ranks come from the distinct objects (a few per PE), joined back on (coll, index), not from
-- a window over every object x step row sorted by two strings.
WITH objects AS (
    SELECT coll, index, CAST(row_number() OVER (ORDER BY coll, index) - 1 AS BIGINT) AS oid
    FROM (SELECT DISTINCT coll, index FROM object_step_parts WHERE index IS NOT NULL)
)
SELECT o.oid, CAST(CAST(p.last AS HUGEINT) & 4294967295 AS BIGINT) AS pe, CAST(p.step AS BIGINT) AS step, p.load_ns,
       CAST(p.execs AS BIGINT) AS execs, CAST(CAST(p.last AS HUGEINT) >> 32 AS BIGINT) AS last_t1, p.coll, p.index
FROM object_step_parts p LEFT JOIN objects o ON p.coll = o.coll AND p.index = o.index
