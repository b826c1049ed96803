-- placement_cats: the chare kind of each collection, and whether it was created or migrated.
-- grain: one row per coll.
-- columns:
--   coll       (collection)
--   cat        (chare kind of the collection as the tracer recorded it: array, group, chare, ...;
--               the greatest over its create, exec and migrate rows)
--   lifecycle  (count of its create and migrate rows: placement_creation runs only when some are)
-- merge: keys(coll) max(cat) sum(lifecycle)
SELECT coll,
       max(cat) AS cat,
       count(*) FILTER (WHERE kind <> 'exec') AS lifecycle
FROM events
WHERE kind IN ('create', 'exec', 'migrate') AND coll IS NOT NULL
GROUP BY coll
ORDER BY coll
