-- scheduling_execs: every exec row, narrow and all integer (strings as hashes), for the exec
-- arrays that placement, communication and scheduling share (paradise.analyses.execarrays).
-- grain: one row per exec event (event level).
-- columns:
--   pe        (PE of the execution)
--   t0, t1    (ns, start and end; t1 null when the exec was still running at the end)
--   cost_ns   (ns, coalesce(active, t1 - t0): active time, suspended coroutines excluded)
--   msg       (id of the message that caused it, null when untraced)
--   obj       (packed object index, null outside any object)
--   step      (iteration number, null when unknown)
--   coll_h    (63-bit hash of coll, null when coll is null; its text is in scheduling_names)
--   index_h   (63-bit hash of index, as coll_h)
--   name_h    (63-bit hash of the entry method name, as coll_h)
--   okey      (a 63-bit hash of (coll, obj) naming the object, null outside any object)
--   reduce_target  (1 when the row passes the candidate-target test of communication_reductions:
--             no msg, chare kind not runtime/mainchare/array, entry not __init__; else 0. Without
--             such a row (with coll and t1) that query's result is empty and it is not run)
-- note: event level, row order not guaranteed (the consumer sorts by pe, t0, t1). Strings leave
-- DuckDB as hashes: exporting millions of strings costs more than the whole rest of the query.
-- merge: client
SELECT pe, t0, t1, coalesce(active, t1 - t0) AS cost_ns, msg, obj, step,
       CASE WHEN coll IS NOT NULL THEN CAST(hash(coll) >> 1 AS BIGINT) END AS coll_h,
       CASE WHEN index IS NOT NULL THEN CAST(hash(index) >> 1 AS BIGINT) END AS index_h,
       CASE WHEN name IS NOT NULL THEN CAST(hash(name) >> 1 AS BIGINT) END AS name_h,
       CASE WHEN coll IS NOT NULL AND obj IS NOT NULL THEN CAST(hash(coll, obj) >> 1 AS BIGINT) END AS okey,
       CAST(coalesce(msg IS NULL AND coalesce(cat, '') NOT IN ('runtime', 'mainchare', 'array')
                     AND name <> '__init__', false) AS TINYINT) AS reduce_target
FROM events
WHERE kind = 'exec'
