-- Per-PE busy and idle time per step, for trace comparison.
-- grain: one row per pe x step (step NULL = events outside any marked step)
-- columns: pe (int), step (int, NULL outside steps), busy_ns (ns: sum of exec active time, else t1-t0),
--          idle_ns (ns: sum of idle intervals), execs (count), t_min (ns: first start), t_max (ns: last end)
-- merge: group by pe, step; sum busy_ns, sum idle_ns, sum execs, min t_min, max t_max
SELECT pe, step,
       sum(CASE WHEN kind = 'exec' THEN coalesce(active, t1 - t0) ELSE 0 END)::BIGINT AS busy_ns,
       sum(CASE WHEN kind = 'idle' THEN t1 - t0 ELSE 0 END)::BIGINT AS idle_ns,
       count(*) FILTER (WHERE kind = 'exec') AS execs,
       min(t0) AS t_min,
       max(coalesce(t1, t0)) AS t_max
FROM events
WHERE kind IN ('exec', 'idle', 'step', 'collective')
GROUP BY pe, step
