-- overview_entries: time per entry method / op / kernel (inclusive of nested rows).
-- grain: one row per name × coll × cat of exec rows.
-- columns:
--   name        string       entry method / op / kernel name
--   coll        string       object collection (chare array, process group), null if none
--   cat         string       source category (Kineto cat, Charm chare kind), null if none
--   count       int64 count  exec rows
--   total_ns    int64 ns     sum of coalesce(active, t1 - t0)
--   max_ns      int64 ns     largest single coalesce(active, t1 - t0)
-- merge: keys(name, coll, cat) sum(count, total_ns) max(max_ns)
SELECT
    name,
    coll,
    cat,
    count(*) AS count,
    coalesce(sum(coalesce(active, t1 - t0)), 0)::BIGINT AS total_ns,
    max(coalesce(active, t1 - t0)) AS max_ns
FROM events
WHERE kind = 'exec'
GROUP BY name, coll, cat
ORDER BY total_ns DESC, name
