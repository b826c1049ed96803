-- training_collectives: collective calls by kind and size, over all ranks.
-- grain: one row per (name, cat, on_device, bucket_log2).
-- columns:
--   name          text         collective (allreduce, broadcast, barrier, nccl kernel name, ...)
--   cat           text         source: ddp_bucket (DDP gradient bucket), c10d (torch.distributed
--                              call), or the Kineto category (cpu_op, user_annotation, kernel, ...)
--   on_device     boolean      rows on a device stream (NCCL kernels) vs host rows
--   bucket_log2   int32        floor(log2(max(bytes, 1))); -1 when bytes is unknown
--   calls         int64 count  rows
--   bytes         int64 bytes  sum of payload bytes (known sizes only)
--   min_bytes, max_bytes int64 bytes
--   dur_ns        int64 ns     sum of t1 - t0 (launch to completion, waiting for peers included)
--   min_ns, max_ns int64 ns    shortest and longest call
--   ranks_max     int32        largest pe seen + 1 (a bound on the ranks involved)
-- merge: keys(name, cat, on_device, bucket_log2) sum(calls, bytes, dur_ns) min(min_bytes, min_ns) max(max_bytes, max_ns, ranks_max)
SELECT
    coalesce(name, '?') AS name,
    coalesce(cat, '') AS cat,
    stream IS NOT NULL AS on_device,
    CASE WHEN bytes IS NULL THEN -1
         ELSE CAST(floor(log2(greatest(bytes, 1))) AS INTEGER) END AS bucket_log2,
    count(*) AS calls,
    CAST(coalesce(sum(bytes), 0) AS BIGINT) AS bytes,
    min(bytes) AS min_bytes,
    max(bytes) AS max_bytes,
    CAST(coalesce(sum(t1 - t0), 0) AS BIGINT) AS dur_ns,
    min(t1 - t0) AS min_ns,
    max(t1 - t0) AS max_ns,
    CAST(max(pe) + 1 AS INTEGER) AS ranks_max
FROM training_rows
WHERE kind = 'collective' AND t1 IS NOT NULL
GROUP BY ALL
ORDER BY dur_ns DESC, name
