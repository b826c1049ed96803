-- scheduling_sends: every send row with a message id, narrow, for matching messages to the
-- execs they caused (paradise.analyses.execarrays).
-- grain: one row per send event with a msg (event level).
-- columns:
--   msg    (message id; a message may have several send rows: the earliest is its send)
--   pe     (PE of the send)
--   t0     (ns, time of the send)
--   bytes  (bytes of the payload, null when unknown)
--   okey   (63-bit hash of the sending object's (coll, obj), as in scheduling_execs; null outside any)
-- note: event level; the consumer keeps the earliest send row per msg.
-- merge: client
SELECT msg, pe, t0, bytes,
       CASE WHEN coll IS NOT NULL AND obj IS NOT NULL THEN CAST(hash(coll, obj) >> 1 AS BIGINT) END AS okey
FROM events
WHERE kind = 'send' AND msg IS NOT NULL
