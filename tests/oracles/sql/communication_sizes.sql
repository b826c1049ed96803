-- communication_sizes: message size histogram (power-of-two buckets), split by PE pair.
-- grain: one row per src_pe x dst_pe x size bucket.
-- columns:
--   src_pe       (PE of the send row)
--   dst_pe       (peer_pe of the send row; null for a broadcast without one peer)
--   bucket_log2  (floor(log2(max(bytes, 1))): the bucket holds sizes in [2^b, 2^(b+1)) bytes)
--   msgs         (count of send rows)
--   bytes        (bytes, sum of payload sizes)
--   min_bytes, max_bytes (bytes)
-- merge: keys(src_pe, dst_pe, bucket_log2) sum(msgs, bytes) min(min_bytes) max(max_bytes)
SELECT pe AS src_pe, peer_pe AS dst_pe,
       CAST(floor(log2(greatest(coalesce(bytes, 0), 1))) AS INTEGER) AS bucket_log2,
       count(*) AS msgs,
       CAST(sum(coalesce(bytes, 0)) AS BIGINT) AS bytes,
       min(bytes) AS min_bytes,
       max(bytes) AS max_bytes
FROM events
WHERE kind = 'send'
GROUP BY ALL
ORDER BY src_pe, dst_pe, bucket_log2
