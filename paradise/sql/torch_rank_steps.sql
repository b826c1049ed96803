-- torch_rank_steps: how many steps rank $pe recorded (0: it failed before its first step).
-- grain: one row for the whole trace.
-- columns:
--   steps  int64   step rows of rank $pe
-- merge: sum(steps)
SELECT count(*) AS steps
FROM events
WHERE kind = 'step' AND pe = $pe
