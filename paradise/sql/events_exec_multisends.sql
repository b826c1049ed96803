-- events_exec_multisends: the messages with several send rows, each reduced to its earliest send.
-- A step of the exec graph (paradise.events.execgraph), kept as table exec_graph_multi: most
-- messages have one send row and are read as they are, so only these few are aggregated.
-- grain: one row per message (msg) with more than one send row.
-- columns:
--   msg      (message id)
--   src_pe   (PE of its earliest send row)
--   send_t0  (ns, time of its earliest send)
--   bytes    (bytes, the largest payload of its send rows)
--   coll, obj (sending object of its earliest send row)
-- merge: client
WITH sr AS NOT MATERIALIZED (
    SELECT msg, pe, t0, bytes, coll, obj FROM events WHERE kind = 'send' AND msg IS NOT NULL
),
multi AS (SELECT msg FROM sr GROUP BY msg HAVING count(*) > 1)
SELECT msg, arg_min(pe, t0) AS src_pe, min(t0) AS send_t0, max(bytes) AS bytes,
       arg_min(coll, t0) AS coll, arg_min(obj, t0) AS obj
FROM sr SEMI JOIN multi USING (msg) GROUP BY msg
