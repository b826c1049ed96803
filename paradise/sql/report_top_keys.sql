-- report_top_keys: busy time per key of the report's time profile (entry method name, or the op
-- category when $by_cat is true), so that report_bins names only the busiest keys.
-- grain: one row per key
-- columns:
--   key      string   entry method name, or coalesce(cat, name) when $by_cat is true
--   busy_ns  double   exec time of the key in ns (nested execs each count; double: sums never overflow)
-- merge: keys(key) sum(busy_ns)
SELECT key, sum(t1 - t0)::DOUBLE AS busy_ns
FROM (
    SELECT CASE WHEN $by_cat THEN coalesce(cat, name) ELSE name END AS key, t0, t1
    FROM events
    WHERE kind = 'exec' AND t1 > t0
)
WHERE key IS NOT NULL
GROUP BY key
