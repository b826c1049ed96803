-- overview_comm: point-to-point message volume between PEs, from send rows.
-- grain: one row per pe × peer_pe (sender, receiver; peer_pe null when the receiver is unknown).
-- columns:
--   pe          int32        sending PE
--   peer_pe     int32        receiving PE
--   messages    int64 count  send rows
--   bytes       int64 bytes  sum of bytes (null bytes count as 0)
-- merge: keys(pe, peer_pe) sum(messages, bytes)
SELECT
    pe,
    peer_pe,
    count(*) AS messages,
    coalesce(sum(bytes), 0)::BIGINT AS bytes
FROM events
WHERE kind = 'send'
GROUP BY pe, peer_pe
ORDER BY pe, peer_pe
