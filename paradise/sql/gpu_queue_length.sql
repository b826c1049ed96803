-- gpu_queue_length: how many launches wait or run on each device stream over time. Every launch
-- (the host row with the device rows' `msg`) adds 1 on each stream it runs on at the launch's
-- start and removes 1 there at the end of its last device row on that stream; the running sum
-- is the stream's queue length. A CUDA graph launch that runs many kernels is one launch, as it
-- takes one slot of the launch queue. Samples are taken at every such edge (HTA's queue-length
-- series); time is weighted by how long each length lasts. Ties at one instant count the ends first.
-- grain: one row per (pe, stream, queue_length) seen.
-- columns:
--   pe            int32        global rank
--   stream        int32        device stream
--   queue_length  int64 count  launches not yet finished on the stream
--   samples       int64 count  edges after which the queue had this length
--   time_ns       int64 ns     time the queue had this length (until the next edge)
-- merge: keys(pe, stream, queue_length) sum(samples, time_ns)
-- Exact when all files of a rank are in one group.
WITH launch AS (
    SELECT msg, min(t0) AS t0 FROM events
    WHERE stream IS NULL AND msg IS NOT NULL AND kind = 'exec' GROUP BY msg
),
k AS (
    SELECT d.pe, d.stream, min(l.t0) AS launched, max(d.t1) AS t1
    FROM events d JOIN launch l ON l.msg = d.msg
    WHERE d.stream IS NOT NULL AND d.kind IN ('exec', 'collective')
    GROUP BY d.pe, d.stream, d.msg
),
edges AS (
    SELECT pe, stream, launched AS t, 1 AS d FROM k
    UNION ALL
    SELECT pe, stream, t1 AS t, -1 AS d FROM k
),
q AS (
    SELECT pe, stream, t,
           sum(d) OVER (PARTITION BY pe, stream ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS queue_length,
           lead(t) OVER (PARTITION BY pe, stream ORDER BY t, d) AS t_next
    FROM edges
)
SELECT pe, stream, CAST(queue_length AS BIGINT) AS queue_length, count(*) AS samples,
       CAST(coalesce(sum(t_next - t), 0) AS BIGINT) AS time_ns
FROM q
GROUP BY pe, stream, queue_length
ORDER BY pe, stream, queue_length
