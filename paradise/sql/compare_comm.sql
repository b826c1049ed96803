-- Communication volume by kind between PEs, for trace comparison.
-- grain: one row per kind x pe x peer_pe (send and collective rows)
-- columns: kind (str), pe (int), peer_pe (int, NULL for collectives/broadcasts), messages (count), bytes (bytes)
-- merge: group by kind, pe, peer_pe; sum messages, sum bytes
SELECT kind, pe, peer_pe, count(*) AS messages, coalesce(sum(bytes), 0)::BIGINT AS bytes
FROM events
WHERE kind IN ('send', 'collective')
GROUP BY kind, pe, peer_pe
