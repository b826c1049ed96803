-- training_streams: device (GPU) time per stream and per device: kernel time, busy time as the
-- union of intervals, and idle gaps between busy intervals. Stream -1 is the whole device
-- (all streams of the rank together), so its idle is time when no stream ran anything.
-- grain: one row per (pe, stream), stream -1 included.
-- columns:
--   pe            int32        global rank
--   stream        int32        device stream; -1 = all streams of the rank
--   kernels       int64 count  rows on the stream (kernels, memcpy, memset, NCCL kernels)
--   kernel_ns     int64 ns     sum of their t1 - t0 (concurrent rows add up)
--   comm_ns       int64 ns     sum of t1 - t0 over collective rows (NCCL kernels)
--   busy_ns       int64 ns     length of the union of the rows' intervals
--   first_ns, last_ns int64 ns first start and last end
--   idle_ns       int64 ns     (last_ns - first_ns) - busy_ns: sum of the gaps
--   gaps          int64 count  gaps between busy intervals
--   max_gap_ns    int64 ns     longest gap
-- merge: keys(pe, stream) sum(kernels, kernel_ns, comm_ns, busy_ns, idle_ns, gaps) min(first_ns) max(last_ns) max(max_gap_ns)
-- Exact when all files of a rank are in one group (unions and gaps do not add across groups);
-- the Dask engine keeps each PE's files together.
WITH dev AS (
    SELECT pe, stream, t0, t1, kind FROM events
    WHERE stream IS NOT NULL AND kind IN ('exec', 'collective') AND t1 >= t0
),
rows2 AS (
    SELECT pe, stream, t0, t1, kind FROM dev
    UNION ALL
    SELECT pe, -1 AS stream, t0, t1, kind FROM dev
),
marked AS (
    SELECT *, max(t1) OVER (PARTITION BY pe, stream ORDER BY t0, t1
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM rows2
),
islands AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR t0 > prev_end THEN 1 ELSE 0 END)
                  OVER (PARTITION BY pe, stream ORDER BY t0, t1 ROWS UNBOUNDED PRECEDING) AS island
    FROM marked
),
u AS (
    SELECT pe, stream, island, min(t0) AS t0, max(t1) AS t1 FROM islands GROUP BY pe, stream, island
),
g AS (
    SELECT pe, stream, t1 - t0 AS busy, t0 - lag(t1) OVER (PARTITION BY pe, stream ORDER BY t0) AS gap
    FROM u
),
busy AS (
    SELECT pe, stream, CAST(sum(busy) AS BIGINT) AS busy_ns, count(gap) AS gaps,
           coalesce(max(gap), 0) AS max_gap_ns
    FROM g GROUP BY pe, stream
),
tot AS (
    SELECT pe, stream, count(*) AS kernels,
           CAST(sum(t1 - t0) AS BIGINT) AS kernel_ns,
           CAST(coalesce(sum(CASE WHEN kind = 'collective' THEN t1 - t0 END), 0) AS BIGINT) AS comm_ns,
           min(t0) AS first_ns, max(t1) AS last_ns
    FROM rows2 GROUP BY pe, stream
)
SELECT t.pe, t.stream, t.kernels, t.kernel_ns, t.comm_ns, b.busy_ns, t.first_ns, t.last_ns,
       (t.last_ns - t.first_ns - b.busy_ns)::BIGINT AS idle_ns, b.gaps, b.max_gap_ns::BIGINT AS max_gap_ns
FROM tot t JOIN busy b USING (pe, stream)
ORDER BY t.pe, t.stream
