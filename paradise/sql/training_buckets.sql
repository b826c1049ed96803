-- training_buckets: DDP gradient buckets (the tracer's ddp_bucket rows) per rank and step. The
-- tracer's rows end when DDP had every bucket of the backward reduced (exact for the last bucket,
-- an upper bound for earlier ones), so the fastest bucket of a step is its last, measured exactly.
-- grain: one row per (pe, step) with at least one bucket.
-- columns:
--   pe            int32        global rank
--   step          int32        step number
--   buckets       int64 count  bucket all-reduces in the step
--   bytes         int64 bytes  gradient bytes reduced in the step
--   min_bytes, max_bytes int64 bytes  smallest and largest bucket
--   dur_ns        int64 ns     sum of bucket durations (launch to completion)
--   min_ns        int64 ns     fastest bucket of the step (least waiting for peers)
--   min_ns_bytes  int64 bytes  size of that fastest bucket
-- merge: keys(pe, step) sum(buckets, bytes, dur_ns) min(min_bytes, min_ns) max(max_bytes) arg_min(min_ns_bytes, min_ns)
SELECT pe, step,
       count(*) AS buckets,
       CAST(sum(bytes) AS BIGINT) AS bytes,
       min(bytes) AS min_bytes,
       max(bytes) AS max_bytes,
       CAST(sum(t1 - t0) AS BIGINT) AS dur_ns,
       min(t1 - t0) AS min_ns,
       arg_min(bytes, t1 - t0) AS min_ns_bytes
FROM training_rows
WHERE kind = 'collective' AND cat = 'ddp_bucket' AND t1 IS NOT NULL AND step IS NOT NULL
GROUP BY pe, step
ORDER BY pe, step
