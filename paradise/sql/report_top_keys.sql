-- report_top_keys: running time per key of the report's time profile (entry method name, or the op
-- category when $by_cat is true) inside [$t_start, $t_end), so that report_bins names only the
-- busiest keys. Reads the `running` view (events_running.sql), as report_bins does.
-- grain: one row per key
-- columns:
--   key      string   entry method name, or coalesce(cat, name) when $by_cat is true; '(unnamed)' for neither
--   busy_ns  double   running time of the key in ns, clipped to the range (nested intervals each
--                     count: a ranking only; double: sums never overflow)
-- merge: keys(key) sum(busy_ns)
SELECT key, sum(least(t1, $t_end) - greatest(t0, $t_start))::DOUBLE AS busy_ns
FROM (
    SELECT coalesce(CASE WHEN $by_cat THEN coalesce(cat, name) ELSE name END, '(unnamed)') AS key, t0, t1
    FROM running
    WHERE t1 > $t_start AND t0 < $t_end AND t1 > t0
)
GROUP BY key
