-- overview_busy_union: per-PE busy time as the union of exec intervals, for traces whose exec rows
-- nest or run concurrently on one PE (Kineto / PyTorch: nested CPU ops, several threads, GPU
-- streams). A sweep in t0 order: each interval adds the part of it that ends after every earlier
-- interval of the PE (its running maximum end). Rows with `active` (suspended coroutines) add
-- their active time instead, unioned with nothing.
-- grain: one row per pe (PEs with exec rows only).
-- columns:
--   pe          int32        PE or global rank
--   busy_ns     int64 ns     length of the union of [t0, t1] over exec rows without active, plus
--                            sum(active) over exec rows with active
--   exec_rows   int64 count  exec rows that contributed
-- merge: keys(pe) sum(busy_ns, exec_rows)
-- Exact when all rows of a PE are in one group of files: the Dask engine keeps each PE's files
-- together; a PE spread over groups would count overlaps across groups twice.
SELECT
    pe,
    coalesce(sum(
        CASE WHEN active IS NOT NULL THEN active
             ELSE greatest(0, t1 - greatest(t0, coalesce(prev_end, t0))) END), 0)::BIGINT AS busy_ns,
    count(*) AS exec_rows
FROM (
    SELECT
        pe, t0, t1, active,
        max(CASE WHEN active IS NULL THEN t1 END) OVER (
            PARTITION BY pe ORDER BY t0 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS prev_end
    FROM events
    WHERE kind = 'exec' AND t1 IS NOT NULL
)
GROUP BY pe
ORDER BY pe
