-- placement_creation: when each collection's objects were created and migrated.
-- grain: one row per coll with create or migrate rows.
-- columns:
--   coll             (collection)
--   creates          (count of create rows)
--   create_first_t0  (ns, first creation)
--   create_last_t0   (ns, last creation)
--   migrations       (count of migrate rows)
-- note: run only when the overview's group table counts create or migrate rows (the first work of
-- a collection is placement_first_work, run under the same condition).
-- merge: keys(coll) sum(creates, migrations) min(create_first_t0) max(create_last_t0)
SELECT coll,
       count(*) FILTER (WHERE kind = 'create') AS creates,
       min(t0) FILTER (WHERE kind = 'create') AS create_first_t0,
       max(t0) FILTER (WHERE kind = 'create') AS create_last_t0,
       count(*) FILTER (WHERE kind = 'migrate') AS migrations
FROM events
WHERE kind IN ('create', 'migrate') AND coll IS NOT NULL
GROUP BY coll
ORDER BY coll
