-- communication_edges: messages between objects, matched send -> exec on `msg`.
-- Run once per `paradise analyze` and shared by placement and communication (the session).
-- grain: one row per src_coll x src_obj x src_pe x dst_coll x dst_obj x dst_pe x entry.
-- columns:
--   src_coll, src_obj, src_index  (sending object; null when sent from outside any object)
--   src_pe                        (PE of the send row)
--   dst_coll, dst_obj, dst_index  (receiving object: the exec the message caused, else the send's peer_*)
--   dst_pe                        (PE of the receiving exec, else the send's peer_pe)
--   entry                         (entry method executed on receipt, else the send's name)
--   dst_cat                       (category of the receiving exec: 'runtime' for runtime machinery
--                                  such as the message combiner's `deliver`; null without an exec)
--   msgs                          (count of deliveries; a broadcast counts once per receiver)
--   bytes                         (bytes, sum of payload sizes over deliveries)
--   min_bytes, max_bytes          (bytes, smallest and largest payload)
--   bcast_msgs                    (count of deliveries whose message reached more than one exec)
-- note: the join on msg needs a message's send and exec rows together (they sit on different PEs),
-- so distributed engines run this query over all files at once (Dask: in its event tables, on a worker).
-- speed: most messages have one send row and one exec; only messages with several send rows
-- (multi) are reduced to their earliest with arg_min, and fan-out is a semi-join on the few
-- messages with several execs (fan), never a window or an aggregate over every message. The
-- event CTEs are NOT MATERIALIZED: re-reading two Parquet columns beats buffering all rows.
-- merge: client
WITH sr AS NOT MATERIALIZED (
    SELECT msg, t0, pe, coll, obj, index, peer_pe, peer_coll, peer_obj, bytes, name
    FROM events WHERE kind = 'send' AND msg IS NOT NULL
),
multi AS (SELECT msg FROM sr GROUP BY msg HAVING count(*) > 1),
s AS (
    SELECT msg, pe, coll, obj, index, peer_pe, peer_coll, peer_obj, bytes, name
    FROM sr ANTI JOIN multi USING (msg)
    UNION ALL
    SELECT msg, arg_min(pe, t0), arg_min(coll, t0), arg_min(obj, t0), arg_min(index, t0), arg_min(peer_pe, t0),
           arg_min(peer_coll, t0), arg_min(peer_obj, t0), max(bytes), arg_min(name, t0)
    FROM sr SEMI JOIN multi USING (msg) GROUP BY msg
),
x AS NOT MATERIALIZED (
    SELECT msg, pe, coll, obj, index, name, cat FROM events WHERE kind = 'exec' AND msg IS NOT NULL
),
fan AS (SELECT msg FROM x GROUP BY msg HAVING count(*) > 1)
SELECT s.coll AS src_coll, s.obj AS src_obj, s.index AS src_index, s.pe AS src_pe,
       coalesce(x.coll, s.peer_coll) AS dst_coll, coalesce(x.obj, s.peer_obj) AS dst_obj,
       x.index AS dst_index, coalesce(x.pe, s.peer_pe) AS dst_pe,
       coalesce(x.name, s.name) AS entry,
       x.cat AS dst_cat,
       count(*) AS msgs,
       CAST(sum(coalesce(s.bytes, 0)) AS BIGINT) AS bytes,
       min(s.bytes) AS min_bytes,
       max(s.bytes) AS max_bytes,
       count(*) FILTER (WHERE fan.msg IS NOT NULL) AS bcast_msgs
FROM s LEFT JOIN x ON s.msg = x.msg LEFT JOIN fan ON s.msg = fan.msg
GROUP BY ALL
ORDER BY src_coll, src_obj, dst_coll, dst_obj, entry
