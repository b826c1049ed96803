-- placement_creation: when each collection's objects were created, migrated and first worked.
-- grain: one row per coll.
-- columns:
--   coll             (collection)
--   cat              (chare kind of the collection as the tracer recorded it: array, group, chare, ...)
--   creates          (count of create rows)
--   create_first_t0  (ns, first creation)
--   create_last_t0   (ns, last creation)
--   migrations       (count of migrate rows)
--   work_first_t0    (ns, first exec of an entry method other than __init__)
-- merge: keys(coll) sum(creates, migrations) min(create_first_t0, work_first_t0) max(cat, create_last_t0)
SELECT coll,
       max(cat) AS cat,
       count(*) FILTER (WHERE kind = 'create') AS creates,
       min(t0) FILTER (WHERE kind = 'create') AS create_first_t0,
       max(t0) FILTER (WHERE kind = 'create') AS create_last_t0,
       count(*) FILTER (WHERE kind = 'migrate') AS migrations,
       min(t0) FILTER (WHERE kind = 'exec' AND name <> '__init__') AS work_first_t0
FROM events
WHERE kind IN ('create', 'exec', 'migrate') AND coll IS NOT NULL
GROUP BY coll
ORDER BY coll
