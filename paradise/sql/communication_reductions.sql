-- communication_reductions: reductions inferred from the timeline where the trace has no message
-- for them (the charm4py tracer does not see contribute()): an execution of a chare that no
-- traced message caused, such that every element of an array ran in between it and the chare's
-- previous execution, is taken as the target of a reduction over that array.
-- grain: one row per inferred target exec x contributing element.
-- columns:
--   dst_coll, dst_obj, dst_index, dst_pe  (the reduction's target object and its PE)
--   entry                                 (target entry method)
--   target_t0                             (ns, start of the target execution)
--   src_coll, src_obj, src_index, src_pe  (a contributing array element, its PE at its last exec)
-- note: a heuristic (no message exists to match), flagged `inferred` where it is reported.
-- speed: the per-object window and the array-size count run only when candidate targets exist.
-- merge: client (a join of execs across PEs)
WITH x AS NOT MATERIALIZED (
    SELECT pe, t0, t0 + coalesce(active, t1 - t0) AS t_end, coll, obj, index, name, msg, cat
    FROM events WHERE kind = 'exec' AND t1 IS NOT NULL AND coll IS NOT NULL
),
-- candidate targets first: the window below then runs only over objects that have one (none
-- in a trace whose every exec is caused by a traced message or is an array element)
tobj AS (
    SELECT DISTINCT coll, obj FROM x
    WHERE msg IS NULL AND coalesce(cat, '') NOT IN ('runtime', 'mainchare', 'array') AND name <> '__init__'
),
o AS (
    SELECT x.*, lag(x.t_end) OVER (PARTITION BY x.coll, x.obj ORDER BY x.t0, x.t_end) AS prev_end
    FROM x SEMI JOIN tobj ON x.coll = tobj.coll AND x.obj IS NOT DISTINCT FROM tobj.obj
),
t AS (
    SELECT * FROM o
    WHERE msg IS NULL AND coalesce(cat, '') NOT IN ('runtime', 'mainchare', 'array') AND name <> '__init__'
),
sizes AS (
    SELECT coll, count(DISTINCT obj) AS n FROM x WHERE cat = 'array' AND EXISTS (SELECT 1 FROM tobj) GROUP BY coll
),
c AS (
    SELECT t.coll AS dst_coll, t.obj AS dst_obj, t.index AS dst_index, t.pe AS dst_pe, t.name AS entry,
           t.t0 AS target_t0, a.coll AS src_coll, a.obj AS src_obj,
           arg_max(a.index, a.t_end) AS src_index, arg_max(a.pe, a.t_end) AS src_pe
    FROM t JOIN x a ON a.cat = 'array' AND a.t_end <= t.t0 AND a.t_end > coalesce(t.prev_end, -1)
    GROUP BY t.coll, t.obj, t.index, t.pe, t.name, t.t0, a.coll, a.obj
),
full_sets AS (
    SELECT c.dst_coll, c.dst_obj, c.target_t0, c.src_coll
    FROM c JOIN sizes s ON s.coll = c.src_coll
    GROUP BY c.dst_coll, c.dst_obj, c.target_t0, c.src_coll, s.n
    HAVING count(*) = s.n AND s.n >= 2
)
SELECT c.* FROM c JOIN full_sets f
  ON c.dst_coll = f.dst_coll AND c.dst_obj = f.dst_obj AND c.target_t0 = f.target_t0 AND c.src_coll = f.src_coll
ORDER BY c.dst_coll, c.target_t0, c.src_coll, c.src_obj
