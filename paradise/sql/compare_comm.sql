-- Communication volume by kind between PEs, for trace comparison.
-- grain: one row per kind x pe x peer_pe (send and collective rows)
-- columns: kind (str), pe (int), peer_pe (int, NULL for collectives/broadcasts), messages (count), bytes (bytes), wire_messages (count: messages that travelled as their own runtime message, i.e. not inside a combined batch)
-- merge: group by kind, pe, peer_pe; sum messages, sum bytes, sum wire_messages
SELECT kind, pe, peer_pe, count(*) AS messages, coalesce(sum(bytes), 0)::BIGINT AS bytes,
       count(*) FILTER (WHERE args IS NULL OR args NOT LIKE '%"combined":true%') AS wire_messages
FROM events
WHERE kind IN ('send', 'collective')
GROUP BY kind, pe, peer_pe
