-- scheduling_events: every exec row and every send row with a message id, narrow and all integer
-- (strings as hashes), for the exec and send arrays that placement, communication and scheduling
-- share (paradise.analyses.execarrays). One scan for both kinds: their rows interleave in the
-- files, so two queries would decode the shared columns twice.
-- grain: one row per exec event or send event with a msg (event level).
-- columns: (both kinds unless marked)
--   is_send   (1 for a send row, 0 for an exec row)
--   pe        (PE of the execution / of the send)
--   t0        (ns, start of the execution / time of the send)
--   t1        (exec: ns, end; null when the exec was still running at the end)
--   cost_ns   (exec: ns, coalesce(active, t1 - t0): active time, suspended coroutines excluded)
--   msg       (exec: id of the message that caused it, null when untraced; send: the message id,
--             a message may have several send rows: the earliest is its send)
--   obj       (packed object index of the executing / sending object, null outside any object)
--   step      (exec: iteration number, null when unknown)
--   bytes     (send: bytes of the payload, null when unknown)
--   peer_pe   (send: PE the message was sent to, null when unknown)
--   peer_obj  (send: packed index of the receiving object, null when unknown)
--   coll_h, index_h, name_h, peer_coll_h  (63-bit hashes of coll, index, name, peer_coll; null
--             when null; their text is in scheduling_names; peer_coll_h for sends only)
--   okey      (a 63-bit hash of (coll, obj) naming the object, null outside any object)
--   reduce_target  (exec: 1 when the row passes the candidate-target test of
--             communication_reductions: no msg, chare kind not runtime/mainchare/array, entry not
--             __init__; else 0. Without such a row (with coll and t1) that query's result is
--             empty and it is not run)
-- note: event level, row order not guaranteed (the consumer sorts execs by pe, t0, t1 and keeps
-- the earliest send row per msg). Strings leave DuckDB as hashes: exporting millions of strings
-- costs more than the whole rest of the query.
-- merge: client
SELECT CAST(kind = 'send' AS TINYINT) AS is_send,
       pe, t0, t1, coalesce(active, t1 - t0) AS cost_ns, msg, obj, step, bytes, peer_pe, peer_obj,
       CASE WHEN coll IS NOT NULL THEN CAST(hash(coll) >> 1 AS BIGINT) END AS coll_h,
       CASE WHEN index IS NOT NULL THEN CAST(hash(index) >> 1 AS BIGINT) END AS index_h,
       CASE WHEN name IS NOT NULL THEN CAST(hash(name) >> 1 AS BIGINT) END AS name_h,
       CASE WHEN peer_coll IS NOT NULL THEN CAST(hash(peer_coll) >> 1 AS BIGINT) END AS peer_coll_h,
       CASE WHEN coll IS NOT NULL AND obj IS NOT NULL THEN CAST(hash(coll, obj) >> 1 AS BIGINT) END AS okey,
       CASE WHEN msg IS NULL AND kind = 'exec'  -- a CASE: the string tests run on those rows only
            THEN CAST(coalesce(coalesce(cat, '') NOT IN ('runtime', 'mainchare', 'array')
                               AND name <> '__init__', false) AS TINYINT)
            ELSE 0 END AS reduce_target
FROM events
WHERE kind = 'exec' OR (kind = 'send' AND msg IS NOT NULL)
