-- gpu_idle_causes: idle gaps between consecutive rows on each device stream, by cause. A gap
-- (start of a row minus the end of the previous row on the stream) is
--   host_wait   when the row's launch (the host row with the same `msg`, e.g. cudaLaunchKernel)
--               started after the previous row ended: the host had not issued it yet;
--   kernel_wait otherwise, when the gap is shorter than $kernel_delay_ns (back-to-back launch
--               overhead) or a device wait row (cuda_sync / event_wait `mark` rows on the stream,
--               e.g. Stream Wait Event) overlaps it: the stream waited for another kernel;
--   other       otherwise.
-- grain: one row per (pe, stream, cause) with at least one gap.
-- columns:
--   pe        int32        global rank
--   stream    int32        device stream
--   cause     text         host_wait | kernel_wait | other
--   gaps      int64 count  gaps of that cause
--   idle_ns   int64 ns     sum of the gaps (negative gaps, rows overlapping on one stream, count 0)
--   max_ns    int64 ns     longest gap
-- merge: keys(pe, stream, cause) sum(gaps, idle_ns) max(max_ns)
-- Exact when all files of a rank are in one group (gaps are between neighbours on a stream).
WITH k AS (
    SELECT pe, stream, t0, t1, msg,
           lag(t1) OVER (PARTITION BY pe, stream ORDER BY t0, t1) AS prev_end
    FROM events
    WHERE stream IS NOT NULL AND kind IN ('exec', 'collective')
),
launch AS (
    SELECT msg, min(t0) AS launch_t0 FROM events
    WHERE stream IS NULL AND msg IS NOT NULL AND kind = 'exec' GROUP BY msg
),
waits AS (
    SELECT pe, stream, t0, t1 FROM events WHERE kind = 'mark' AND stream IS NOT NULL AND t1 > t0
),
gaps AS (
    SELECT k.pe, k.stream, k.t0, k.prev_end, greatest(k.t0 - k.prev_end, 0) AS gap, l.launch_t0
    FROM k LEFT JOIN launch l ON l.msg = k.msg
    WHERE k.prev_end IS NOT NULL
),
classified AS (
    SELECT pe, stream, gap,
           CASE WHEN launch_t0 IS NOT NULL AND launch_t0 > prev_end THEN 'host_wait'
                WHEN gap < $kernel_delay_ns OR EXISTS (
                    SELECT 1 FROM waits w WHERE w.pe = g.pe AND w.stream = g.stream
                                            AND w.t0 < g.t0 AND w.t1 > g.prev_end) THEN 'kernel_wait'
                ELSE 'other' END AS cause
    FROM gaps g
)
SELECT pe, stream, cause, count(*) AS gaps, CAST(sum(gap) AS BIGINT) AS idle_ns, max(gap)::BIGINT AS max_ns
FROM classified
GROUP BY pe, stream, cause
ORDER BY pe, stream, cause
