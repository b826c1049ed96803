-- events_waits: idle time spent waiting for messages, per PE and entry method.
-- reads: exec_graph
-- grain: one row per pe x coll x entry with wait time.
-- columns:
--   pe       (PE that waited)
--   coll     (collection of the exec the message released, null outside any object)
--   entry    (its entry method, null when unnamed)
--   wait_ns  (ns, sum of wait_msg_ns: idle time before those execs waiting for their message)
-- merge: client
SELECT pe, coll, name AS entry, sum(wait_msg_ns)::BIGINT AS wait_ns
FROM exec_graph
WHERE wait_msg_ns > 0
GROUP BY ALL
ORDER BY pe, coll NULLS FIRST, entry NULLS FIRST
