-- report_bins: utilization over time for `paradise report` (Projections' usage and time
-- profiles): each PE's running time (the `running` view, events_running.sql: an execution that
-- suspended counts only while its pieces ran) and idle time, cut into $n_bins bins of $bin_ns
-- from $t_start and clipped to [$t_start, $t_end) (the report's window), rolled up three ways.
-- Busy time of a PE in a bin is the union of its running intervals there (nested ops,
-- concurrent threads and streams count once, as in the overview), so a PE is never more than
-- 100 % busy. Keys get their own (exclusive) time: on each lane (pe, thread, stream) an instant
-- belongs to the innermost interval running then (the latest started of those open: an
-- execution that ran another inside it, such as a coroutine resumed from a future's
-- delivery, keeps only its own time, as `active` does); where several lanes of a PE run at
-- once, the PE's busy time in the bin is shared among them in proportion to their time.
-- Idle time: the union of the PE's idle rows less what its busy time covers, as in the overview
-- (overview_pe_time.sql): |busy ∪ idle| - |busy| per bin.
-- grain: one row per pe × bin (level 0), per bin × key and per bin for idle (level 1), per pe × key
-- and per pe for idle (level 2); at most (PEs + keys + 1) × bins + PEs × (keys + 1) rows.
-- columns:
--   level    int32     0: a pe × bin row (key null); 1: a bin row summed over PEs (pe null);
--                      2: a pe row summed over bins (bin null)
--   pe       int32     PE or rank (levels 0 and 2), null on level 1
--   bin      int64     bin number: (t - $t_start) // $bin_ns (levels 0 and 1), null on level 2
--   key      string    levels 1 and 2: entry method name, or the op category when $by_cat is true
--                      (coalesce(cat, name)), '(unnamed)' for rows with neither; only the keys in
--                      $keys (the busiest, report_top_keys.sql) keep their name, the rest are summed
--                      under $other, so the result stays small whatever the number of names; null
--                      on level 0 and on the idle rows of levels 1 and 2
--   busy_ns  double ns running time inside the bin (level 0: the union; levels 1, 2: the key's share)
--   idle_ns  double ns idle time inside the bin (rows with a null key)
-- merge: keys(level, pe, bin, key) sum(busy_ns, idle_ns)
-- Exact when all rows of a PE are in one group of files (the Dask engine keeps each PE's files
-- together): the unions are per PE.
WITH run AS (
    SELECT pe, CASE WHEN list_contains($keys::VARCHAR[], k) THEN k ELSE $other END AS key,
           CASE WHEN kind = 'phase' THEN CAST(1 AS HUGEINT) << 100 WHEN stream IS NOT NULL THEN 2 * CAST(stream AS HUGEINT) + 1
                ELSE 2 * CAST(coalesce(tid, 0) AS HUGEINT) END AS lane,  -- phases (2^100), streams (odd), threads (even)
           greatest(t0, $t_start) AS t0, least(t1, $t_end) AS t1
    FROM (SELECT *, coalesce(CASE WHEN $by_cat THEN coalesce(cat, name) ELSE name END, '(unnamed)') AS k FROM running)
    WHERE t1 > $t_start AND t0 < $t_end AND t1 > t0
),
idle AS (
    SELECT pe, greatest(t0, $t_start) AS t0, least(t1, $t_end) AS t1 FROM events
    WHERE kind = 'idle' AND t1 > $t_start AND t0 < $t_end AND t1 > t0
),
iso AS (  -- alone: no other interval of its lane overlaps it (then all its time is its own)
    SELECT pe, lane, key, t0, t1,
           coalesce(max(t1) OVER w <= t0, true) AND coalesce(lead(t0) OVER w >= t1, true) AS alone
    FROM run
    WINDOW w AS (PARTITION BY pe, lane ORDER BY t0, t1 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
lanes AS (  -- the intervals that overlap others: +1 at each start, -1 at each end; the depth after each
    SELECT pe, lane, t, key, t1 IS NOT NULL AS opens,
           sum(CASE WHEN t1 IS NULL THEN -1 ELSE 1 END) OVER w AS depth,
           row_number() OVER w AS pos,
           lead(t) OVER w AS t_next
    FROM (SELECT pe, lane, t0 AS t, key, t1 FROM iso WHERE NOT alone
          UNION ALL SELECT pe, lane, t1, NULL, NULL FROM iso WHERE NOT alone)
    WINDOW w AS (PARTITION BY pe, lane ORDER BY t, t1 IS NOT NULL, t1 DESC NULLS LAST)
),
segments AS (  -- each lane's time, each instant to one key: [t, t_next) belongs to the last interval
               -- opened at the depth it runs at (the innermost running then)
    SELECT pe, key, t0, t1 FROM iso WHERE alone
    UNION ALL
    SELECT g.pe, s.key, g.t AS t0, g.t_next AS t1
    FROM (SELECT * FROM lanes WHERE depth > 0 AND t_next > t) g
    ASOF JOIN (SELECT pe, lane, depth, pos, key FROM lanes WHERE opens) s
      ON s.pe = g.pe AND s.lane = g.lane AND s.depth = g.depth AND s.pos <= g.pos
),
swept AS (  -- disjoint parts whose union is the union of a PE's intervals: each interval's part after
            -- every earlier interval of its set ended (sets: running alone, running and idle together)
    SELECT pe, covered, greatest(t0, coalesce(prev, t0)) AS t0, t1
    FROM (SELECT pe, covered, t0, t1,
                 max(t1) OVER (PARTITION BY pe, covered ORDER BY t0, t1 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                   AS prev
          FROM (SELECT pe, false AS covered, t0, t1 FROM run
                UNION ALL SELECT pe, true, t0, t1 FROM run
                UNION ALL SELECT pe, true, t0, t1 FROM idle))
    WHERE t1 > coalesce(prev, t0)
),
iv AS (  -- what: 0 a key's own time on its lane, 1 busy (union of running), 2 busy or idle (union of both)
    SELECT pe, 0 AS what, key, t0, t1 FROM segments
    UNION ALL SELECT pe, CASE WHEN covered THEN 2 ELSE 1 END, NULL, t0, t1 FROM swept
),
fine AS (
    SELECT pe, what, key, bin,
           sum(least(t1, $t_start + (bin + 1) * $bin_ns) - greatest(t0, $t_start + bin * $bin_ns))::DOUBLE AS ns
    FROM (SELECT pe, what, key, t0, t1,
                 unnest(range(greatest((t0 - $t_start) // $bin_ns, 0), least((t1 - 1 - $t_start) // $bin_ns + 1, $n_bins))) AS bin
          FROM iv)
    GROUP BY pe, what, key, bin
),
pe_bin AS (
    SELECT pe, bin,
           coalesce(sum(ns) FILTER (WHERE what = 1), 0) AS busy,
           coalesce(sum(ns) FILTER (WHERE what = 0), 0) AS raw,
           greatest(coalesce(sum(ns) FILTER (WHERE what = 2), 0) - coalesce(sum(ns) FILTER (WHERE what = 1), 0), 0) AS idle
    FROM fine GROUP BY pe, bin
),
shared AS (
    SELECT f.pe, f.bin, f.key, f.ns * p.busy / p.raw AS busy
    FROM fine f JOIN pe_bin p ON p.pe = f.pe AND p.bin = f.bin
    WHERE f.what = 0 AND p.raw > 0
)
SELECT CAST(level AS INTEGER) AS level, pe, bin, key, busy_ns, idle_ns
FROM (
    SELECT 0 AS level, pe, bin, NULL AS key, busy AS busy_ns, idle AS idle_ns FROM pe_bin
    UNION ALL SELECT 1, NULL, bin, key, sum(busy), 0 FROM shared GROUP BY bin, key
    UNION ALL SELECT 1, NULL, bin, NULL, 0, sum(idle) FROM pe_bin GROUP BY bin
    UNION ALL SELECT 2, pe, NULL, key, sum(busy), 0 FROM shared GROUP BY pe, key
    UNION ALL SELECT 2, pe, NULL, NULL, 0, sum(idle) FROM pe_bin GROUP BY pe
)
ORDER BY level, pe NULLS FIRST, bin NULLS FIRST, key NULLS FIRST
