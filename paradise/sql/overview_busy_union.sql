-- overview_busy_union: per-PE busy time as the union of exec intervals, for traces whose exec rows
-- nest or run concurrently on one PE (Kineto / PyTorch: nested CPU ops, several threads, GPU
-- streams). A sweep in (pe, t0) order: each interval adds the part of it that ends after every
-- earlier interval of its PE (their running maximum end). Rows with `active` (suspended
-- coroutines) add their active time instead and take no part in the union.
-- grain: one row per pe (PEs with exec rows only).
-- columns:
--   pe          int32        PE or global rank
--   busy_ns     int64 ns     length of the union of [t0, t1] over exec rows without active, plus
--                            sum(active) over exec rows with active
--   exec_rows   int64 count  exec rows that contributed
-- merge: keys(pe) sum(busy_ns, exec_rows)
-- Exact when all rows of a PE are in one group of files: the Dask engine keeps each PE's files
-- together; a PE spread over groups would count overlaps across groups twice.
-- Speed: one global ORDER BY pe, t0 window is about twice as fast in DuckDB as PARTITION BY pe.
-- The running maximum therefore runs over all PEs, on ends packed as (pe << 64) + (t1 + 2^63):
-- within a PE the packed order is the order of t1, and a maximum whose high half is another PE
-- (an earlier one) means "no earlier interval on this PE".
SELECT
    pe,
    coalesce(sum(
        CASE WHEN active IS NOT NULL THEN active
             WHEN prev IS NULL OR (prev >> 64) <> pe THEN t1 - t0
             ELSE greatest(0, t1 - greatest(t0, ((prev & 18446744073709551615) - 9223372036854775808)::BIGINT))
        END), 0)::BIGINT AS busy_ns,
    count(*) AS exec_rows
FROM (
    SELECT
        pe, t0, t1, active,
        max(CASE WHEN active IS NULL THEN (pe::HUGEINT << 64) + t1::HUGEINT + 9223372036854775808 END) OVER (
            ORDER BY pe, t0 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS prev
    FROM events
    WHERE kind = 'exec' AND t1 IS NOT NULL
)
GROUP BY pe
ORDER BY pe
