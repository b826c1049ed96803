-- demo_placement: the PE each array element ran on (the last PE it ran on: elements do not
-- migrate without a balancer), for `paradise demo`'s moves and placed-as-mapped counts.
-- grain: one row per array element (coll, index) that ran an exec.
-- columns:
--   coll   string   collection (array) of the element
--   index  string   element index
--   pe     int32    PE of the element's last-ending exec
--   t_last int64 ns the end of that exec
-- merge: keys(coll, index) arg_max(pe, t_last) max(t_last)
SELECT coll, index, arg_max(pe, t1) AS pe, max(t1) AS t_last
FROM events
WHERE kind = 'exec' AND coll IS NOT NULL AND index IS NOT NULL
GROUP BY coll, index
