-- export_projections_entries: the entry points and chares of a Projections export (.sts tables).
-- An entry point is a (collection, entry name) pair of an exec row, or the (peer_coll, name)
-- target of a send row; ep numbers follow the sort order, the same in export_projections_lines.
-- grain: one row per entry point
-- columns:
--   ep     int64   entry point number, 0-based, in (coll, name) order, nulls first
--   coll   string  collection (the Projections chare), null for none
--   name   string  entry method name, null for none
--   ndims  int64   index dimensions of the collection's objects (1 + commas of `index`; 1 when it is not a
--                  list of integers: one 0 is written); 0 for none and
--                  for collections that are not chare arrays (cat other than 'array': groups, the main
--                  chare, the runtime's chares), which Projections logs as plain chares, so a round
--                  trip keeps them out of the application's objects
-- merge: client (needs all files at once: numbering over the distinct entry points of the trace)
WITH ent AS (
    SELECT coll, name, max(CASE WHEN index IS NULL OR coalesce(cat, 'array') <> 'array' THEN 0
                                WHEN NOT regexp_full_match(index, '\[-?[0-9]{1,18}(, ?-?[0-9]{1,18})*\]') THEN 1
                                ELSE length(index) - length(replace(index, ',', '')) + 1 END) AS ndims
    FROM events WHERE kind = 'exec' GROUP BY coll, name
    UNION ALL
    SELECT peer_coll, name, 0 FROM events WHERE kind = 'send' GROUP BY peer_coll, name
)
SELECT CAST(row_number() OVER (ORDER BY coll NULLS FIRST, name NULLS FIRST) - 1 AS BIGINT) AS ep, coll, name,
       CAST(max(ndims) AS BIGINT) AS ndims
FROM ent
GROUP BY coll, name
ORDER BY ep
