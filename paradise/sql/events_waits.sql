-- events_waits: idle time spent waiting for messages, per PE and entry method.
-- reads: graph_part (one bucket of the exec graph: a reader step of paradise.events.graphread)
-- grain: one row per pe x coll x entry with wait time (in a bucket; merged: in the run).
-- columns:
--   pe       (PE that waited)
--   coll     (collection of the exec the message released, null outside any object)
--   entry    (its entry method, null when unnamed)
--   wait_ns  (ns, sum of wait_msg_ns: idle time before those execs waiting for their message)
-- merge: group by pe, coll, entry; sum(wait_ns)
SELECT pe, coll, name AS entry, sum(wait_msg_ns)::BIGINT AS wait_ns
FROM graph_part
WHERE wait_msg_ns > 0
GROUP BY ALL
