-- report_bins: utilization over time for `paradise report` (Projections' usage and time
-- profiles): exec and idle time cut into fixed time bins, in one scan, rolled up three ways.
-- grain: one row per pe × bin (level 0), per bin × key (level 1) and per pe × key (level 2);
-- bins are $bin_ns wide from $t_start, only bins 0..$n_bins-1 are kept, and only the keys in $keys
-- (the busiest, report_top_keys.sql) keep their name (the rest are summed under $other), so the result has
-- at most (PEs + keys) × bins + PEs × keys rows whatever the trace's size or name count. An
-- interval spanning several bins adds its overlap to each.
-- columns:
--   level    int32     0: a pe × bin row (key null); 1: a bin × key row summed over PEs (pe null);
--                      2: a pe × key row summed over bins (bin null)
--   pe       int32     PE or rank (levels 0 and 2), null on level 1
--   bin      int64     bin number: (t - $t_start) // $bin_ns (levels 0 and 1), null on level 2
--   key      string    levels 1 and 2: entry method name, or the op category when $by_cat is true
--                      (coalesce(cat, name)); null on level 0 and for idle time
--   busy_ns  int64 ns  exec time inside the bin (nested execs each count)
--   idle_ns  int64 ns  idle-row time inside the bin
-- merge: keys(level, pe, bin, key) sum(busy_ns, idle_ns)
WITH base AS (
    SELECT
        pe,
        kind = 'idle' AS is_idle,
        CASE WHEN kind = 'idle' THEN NULL WHEN $by_cat THEN coalesce(cat, name) ELSE name END AS key,
        t0,
        t1
    FROM events
    WHERE kind IN ('exec', 'idle') AND t1 > t0
),
iv AS (
    SELECT
        b.pe,
        b.is_idle,
        CASE WHEN b.key IS NULL OR list_contains($keys::VARCHAR[], b.key) THEN b.key ELSE $other END AS key,
        b.t0,
        b.t1,
        unnest(range(greatest((b.t0 - $t_start) // $bin_ns, 0), least((b.t1 - 1 - $t_start) // $bin_ns + 1, $n_bins))) AS bin
    FROM base AS b
),
cut AS (
    SELECT pe, is_idle, key, bin,
           least(t1, $t_start + (bin + 1) * $bin_ns) - greatest(t0, $t_start + bin * $bin_ns) AS ns
    FROM iv
),
fine AS (
    SELECT pe, bin, key,
           coalesce(sum(ns) FILTER (WHERE NOT is_idle), 0) AS busy,
           coalesce(sum(ns) FILTER (WHERE is_idle), 0) AS idle
    FROM cut
    GROUP BY pe, bin, key
)
SELECT
    CAST(CASE grouping(pe, bin, key) WHEN 1 THEN 0 WHEN 4 THEN 1 ELSE 2 END AS INTEGER) AS level,
    pe,
    bin,
    key,
    sum(busy)::BIGINT AS busy_ns,
    sum(idle)::BIGINT AS idle_ns
FROM fine
GROUP BY GROUPING SETS ((pe, bin), (bin, key), (pe, key))
ORDER BY level, pe NULLS FIRST, bin NULLS FIRST, key NULLS FIRST
