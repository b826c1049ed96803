-- Time per entry method / op per step, for trace comparison.
-- grain: one row per name x step (exec rows only)
-- columns: name (str), step (int, NULL outside steps), calls (count), total_ns (ns: sum of active time, else t1-t0)
-- merge: group by name, step; sum calls, sum total_ns
SELECT name, step, count(*) AS calls, sum(coalesce(active, t1 - t0))::BIGINT AS total_ns
FROM events
WHERE kind = 'exec'
GROUP BY name, step
