-- resilience_incidents: every failure, restart and restore row, with the first step that followed it.
-- grain: one row per failure / restart / restore event (few: a handful per failure per rank).
-- columns:
--   kind           (failure | restart | restore)
--   name           (exception type, restart, or the restored checkpoint's kind)
--   pe             (rank that recorded it)
--   t0             (ns, when it happened: failure detected, restart began, restore began)
--   t1             (ns, end of a restore; null for instants)
--   step           (iteration: the failed step, or the next step after a restore)
--   args           (the row's JSON attributes, e.g. attempt, replayed_steps)
--   next_step_t0   (ns, start of the first step row on the same rank that began at or after t0)
--   next_step      (iteration number of that step row)
-- merge: keys(kind, name, pe, t0) min(next_step_t0) arg_min(next_step, next_step_t0) any(t1, step, args)
-- note: a rank's step rows must be in the same task as its events; per-PE files keep this.
WITH ev AS (
    SELECT CAST(kind AS VARCHAR) AS kind, coalesce(CAST(name AS VARCHAR), '') AS name, pe, t0, t1, step, args
    FROM training_rows
    WHERE kind IN ('failure', 'restart', 'restore')
), st AS (
    SELECT pe, t0, step FROM training_rows WHERE kind = 'step'
)
SELECT ev.kind, ev.name, ev.pe, ev.t0, any_value(ev.t1) AS t1, any_value(ev.step) AS step,
       any_value(ev.args) AS args,
       min(st.t0) AS next_step_t0,
       arg_min(st.step, st.t0) AS next_step
FROM ev LEFT JOIN st ON st.pe = ev.pe AND st.t0 >= ev.t0
GROUP BY ev.kind, ev.name, ev.pe, ev.t0
ORDER BY ev.t0, ev.pe, ev.kind
