-- scheduling_sends: every send row with a message id, narrow and all integer (strings as hashes),
-- for matching messages to the execs they caused (paradise.analyses.execarrays).
-- grain: one row per send event with a msg (event level).
-- columns:
--   msg       (message id; a message may have several send rows: the earliest is its send)
--   pe        (PE of the send)
--   t0        (ns, time of the send)
--   bytes     (bytes of the payload, null when unknown)
--   obj       (packed index of the sending object, null outside any object)
--   peer_pe   (PE the message was sent to, null when unknown)
--   peer_obj  (packed index of the receiving object, null when unknown)
--   coll_h, index_h, name_h, peer_coll_h  (63-bit hashes of coll, index, name, peer_coll; null
--             when null; their text is in scheduling_names)
--   okey      (63-bit hash of the sending object's (coll, obj), as in scheduling_execs; null outside any)
-- note: event level; the consumer keeps the earliest send row per msg.
-- merge: client
SELECT msg, pe, t0, bytes, obj, peer_pe, peer_obj,
       CASE WHEN coll IS NOT NULL THEN CAST(hash(coll) >> 1 AS BIGINT) END AS coll_h,
       CASE WHEN index IS NOT NULL THEN CAST(hash(index) >> 1 AS BIGINT) END AS index_h,
       CASE WHEN name IS NOT NULL THEN CAST(hash(name) >> 1 AS BIGINT) END AS name_h,
       CASE WHEN peer_coll IS NOT NULL THEN CAST(hash(peer_coll) >> 1 AS BIGINT) END AS peer_coll_h,
       CASE WHEN coll IS NOT NULL AND obj IS NOT NULL THEN CAST(hash(coll, obj) >> 1 AS BIGINT) END AS okey
FROM events
WHERE kind = 'send' AND msg IS NOT NULL
