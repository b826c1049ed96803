-- export_projections_entries: the entry points and chares of a Projections export (.sts tables).
-- An entry point is a (collection, entry name) pair of an exec row, or the (peer_coll, name)
-- target of a send row; ep numbers follow the sort order, the same in export_projections_lines.
-- grain: one row per entry point
-- columns:
--   ep     int64   entry point number, 0-based, in (coll, name) order, nulls first
--   coll   string  collection (the Projections chare), null for none
--   name   string  entry method name, null for none
--   ndims  int64   index dimensions of the collection's objects (1 + commas of `index`; 1 when it is not a
--                  list of integers: one 0 is written), 0 if none
-- merge: client (needs all files at once: numbering over the distinct entry points of the trace)
WITH ent AS (
    SELECT coll, name, max(CASE WHEN NOT regexp_full_match(index, '\[-?[0-9]{1,18}(, ?-?[0-9]{1,18})*\]') THEN 1
                                WHEN index IS NULL THEN 0 ELSE length(index) - length(replace(index, ',', '')) + 1 END) AS ndims
    FROM events WHERE kind = 'exec' GROUP BY coll, name
    UNION ALL
    SELECT peer_coll, name, 0 FROM events WHERE kind = 'send' GROUP BY peer_coll, name
)
SELECT CAST(row_number() OVER (ORDER BY coll NULLS FIRST, name NULLS FIRST) - 1 AS BIGINT) AS ep, coll, name,
       CAST(max(ndims) AS BIGINT) AS ndims
FROM ent
GROUP BY coll, name
ORDER BY ep
