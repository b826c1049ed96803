-- overview_pe_time: the one accounting of each PE's time, read by every view (overview, placement,
-- scheduling, what-if, compare, the report): span = busy + idle + other, none negative.
--   busy  = length of the union of the PE's running intervals (the view `running`,
--           events_running.sql: exec rows without pieces, pieces, phases);
--   idle  = length of the union of its idle rows minus what busy covers (idle never overlaps
--           busy: a sweep over running and idle rows together measures busy ∪ idle, and
--           idle = |busy ∪ idle| - busy);
--   other = span - |busy ∪ idle| (time neither running nor idle: scheduler, tracer, gaps).
-- Each union lies inside the PE's span [t_first, t_last], so all three are >= 0 by construction.
-- A sweep in (pe, t0) order: each interval adds the part of it that ends after every earlier
-- interval of its PE (their running maximum end); busy intervals keep a maximum of their own.
-- Order: $intervals names the rows swept, `intervals` (events_running.sql, the trace's row order:
-- each PE's rows in time order, docs/trace-format.md "Row order") or `intervals_by_time` (sorted).
-- The sweep reads them in that order without sorting (streaming windows, OVER ()) and counts the
-- rows that break (pe, t0) order in unordered_rows: a caller that sees any sweeps again over
-- `intervals_by_time` (paradise.engines.pe_time; a crashed run's part files are not in order).
-- grain: one row per pe that has any row.
-- columns:
--   pe             int32        PE or global rank
--   t_first        int64 ns     earliest t0 of any row of the PE
--   t_last         int64 ns     latest end (t1, or t0 for instants) of any row of the PE
--   span_ns        int64 ns     t_last - t_first
--   busy_ns        int64 ns     union of the running intervals
--   idle_ns        int64 ns     union of the idle rows, less their overlap with busy
--   other_ns       int64 ns     span_ns - busy_ns - idle_ns
--   busy_rows      int64 count  running intervals (0: nothing on this PE measures busy time)
--   idle_rows      int64 count  idle rows
--   unordered_rows int64 count  intervals that came after a later one (a larger pe, or the same pe
--                               and a larger t0): when any PE has one, the sweep is not valid
-- merge: keys(pe) sum(busy_ns, idle_ns, other_ns, span_ns, busy_rows, idle_rows, unordered_rows) min(t_first) max(t_last)
--   exact when all rows of a PE are in one group of files (the Dask engine keeps each PE's files
--   together); a PE spread over groups would count overlaps across groups twice.
-- Speed: no sort: the running maxima are cumulative over the rows in their order, on ends packed as
-- (pe << 64) + (t1 + 2^63): with the PEs in ascending order, a maximum whose high half is another
-- (earlier) PE means "no earlier interval on this PE".
WITH spans AS (
    SELECT pe, min(t0) AS t_first, max(coalesce(t1, t0)) AS t_last
    FROM events GROUP BY pe
),
packed AS (
    SELECT pe, t0, t1, kind <> 'idle' AS busy,
           lag(pe) OVER () AS prev_pe,
           lag(t0) OVER () AS prev_t0,
           max(CASE WHEN kind <> 'idle' THEN (pe::HUGEINT << 64) + t1::HUGEINT + 9223372036854775808 END)
               OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS max_busy,
           max((pe::HUGEINT << 64) + t1::HUGEINT + 9223372036854775808)
               OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS max_any
    FROM query_table($intervals)
),
swept AS (
    SELECT pe, t0, t1, busy, prev_pe > pe OR (prev_pe = pe AND prev_t0 > t0) AS unordered,
           lag(max_busy) OVER () AS prev_busy,
           lag(max_any) OVER () AS prev_any
    FROM packed
),
added AS (
    SELECT pe, busy, unordered,
           CASE WHEN prev_busy IS NULL OR (prev_busy >> 64) <> pe THEN greatest(0, t1 - t0)
                ELSE greatest(0, t1 - greatest(t0, ((prev_busy & 18446744073709551615) - 9223372036854775808)::BIGINT))
           END AS busy_add,
           CASE WHEN prev_any IS NULL OR (prev_any >> 64) <> pe THEN greatest(0, t1 - t0)
                ELSE greatest(0, t1 - greatest(t0, ((prev_any & 18446744073709551615) - 9223372036854775808)::BIGINT))
           END AS any_add
    FROM swept
),
per_pe AS (
    SELECT pe,
           coalesce(sum(busy_add) FILTER (WHERE busy), 0)::BIGINT AS busy_ns,
           coalesce(sum(any_add), 0)::BIGINT AS covered_ns,
           count(*) FILTER (WHERE busy) AS busy_rows,
           count(*) FILTER (WHERE NOT busy) AS idle_rows,
           count(*) FILTER (WHERE unordered) AS unordered_rows
    FROM added GROUP BY pe
)
SELECT s.pe, s.t_first, s.t_last, (s.t_last - s.t_first)::BIGINT AS span_ns,
       coalesce(p.busy_ns, 0)::BIGINT AS busy_ns,
       coalesce(p.covered_ns - p.busy_ns, 0)::BIGINT AS idle_ns,
       (s.t_last - s.t_first - coalesce(p.covered_ns, 0))::BIGINT AS other_ns,
       coalesce(p.busy_rows, 0)::BIGINT AS busy_rows,
       coalesce(p.idle_rows, 0)::BIGINT AS idle_rows,
       coalesce(p.unordered_rows, 0)::BIGINT AS unordered_rows
FROM spans s LEFT JOIN per_pe p ON s.pe = p.pe
ORDER BY s.pe
