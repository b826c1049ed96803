-- overview_collectives: collective operations (all_reduce, broadcast, Charm reductions) per rank.
-- grain: one row per name × pe of collective rows.
-- columns:
--   name        string       collective name
--   pe          int32        rank / PE that took part
--   count       int64 count  collective rows
--   bytes       int64 bytes  sum of bytes (null bytes count as 0)
--   total_ns    int64 ns     sum of t1 - t0 (instants count 0)
--   max_ns      int64 ns     longest single collective
-- merge: keys(name, pe) sum(count, bytes, total_ns) max(max_ns)
SELECT
    name,
    pe,
    count(*) AS count,
    coalesce(sum(bytes), 0)::BIGINT AS bytes,
    coalesce(sum(coalesce(t1, t0) - t0), 0)::BIGINT AS total_ns,
    max(coalesce(t1, t0) - t0) AS max_ns
FROM events
WHERE kind = 'collective'
GROUP BY name, pe
ORDER BY name, pe
