-- events_object_steps: object loads per step, one row per object (coll, index) and step, with
-- integer object ids; kept as an engine table (paradise.events.objloads) so that the client
-- fetches integers only, and the object labels once.
-- reads: events
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
-- last: t1 and pe in one number (t1 * 2^32 + pe; PEs are 0 .. 2^31 - 1), so one max orders by t1, then PE.
-- merge: client
WITH g AS (
    SELECT coll, index, coalesce(step, -1) AS step,
           CAST(sum(coalesce(active, t1 - t0)) AS BIGINT) AS load_ns, count(*) AS execs,
           max((CAST(t1 AS HUGEINT) << 32) + pe) AS last
    FROM events
    WHERE kind = 'exec' AND coll IS NOT NULL AND t1 IS NOT NULL
    GROUP BY coll, index, coalesce(step, -1)
)
SELECT CASE WHEN index IS NOT NULL
            THEN CAST(dense_rank() OVER (PARTITION BY index IS NULL ORDER BY coll, index) - 1 AS BIGINT) END AS oid,
       CAST(last & 4294967295 AS BIGINT) AS pe, CAST(step AS BIGINT) AS step, load_ns, CAST(execs AS BIGINT) AS execs,
       CAST(last >> 32 AS BIGINT) AS last_t1, coll, index
FROM g
