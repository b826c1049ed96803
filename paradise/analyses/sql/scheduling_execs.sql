-- scheduling_execs: every execution, narrow (no identity beyond its entry), for the critical
-- path of traces too large to replay (paradise.analyses.execarrays matches messages in numpy).
-- grain: one row per exec event with an end (event level).
-- columns:
--   pe        (PE it ran on)
--   t0, t1    (ns, start and end)
--   cost_ns   (ns, `active` or t1 - t0: the time it really computed)
--   msg       (id of the message that caused it, null when untraced)
--   coll      (collection of the object, null outside any)
--   name      (entry method)
--   okey      (a 63-bit hash of (coll, obj) naming the object, null outside any object)
-- note: event level, row order not guaranteed (the consumer sorts by pe, t0, t1).
-- merge: client
SELECT pe, t0, t1, coalesce(active, t1 - t0) AS cost_ns, msg, coll, name,
       CASE WHEN coll IS NOT NULL AND obj IS NOT NULL THEN CAST(hash(coll, obj) >> 1 AS BIGINT) END AS okey
FROM events
WHERE kind = 'exec' AND t1 IS NOT NULL
