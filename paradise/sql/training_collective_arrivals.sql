-- training_collective_arrivals: which rank arrived last at each collective, the one the others waited for.
-- The k-th call of a collective (name, group) on one rank meets the k-th call of it on every other
-- rank (ranks of a process group issue its collectives in the same order). A rank's arrival is
-- the start of its call (t0); the rank with the latest start arrived last. Calls that every rank
-- starts at the same instant have no last rank and are left out.
-- grain: one row per (name, pe) with at least one met call.
-- columns:
--   name          text         collective (c10d:: op, gloo:/nccl: annotation, NCCL kernel, tracer row)
--   pe            int32        rank
--   calls         int64 count  calls of this rank met by at least one other rank
--   last          int64 count  of those, calls at which this rank arrived last
--   wait_ns       int64 ns     sum over the calls it arrived last at of last start - first start
--                              (how long the first rank waited for it)
-- merge: client (a call is matched across ranks: all files of a trace at once)
WITH calls AS (
    SELECT name, coalesce("group", '') AS grp, pe, t0,
           row_number() OVER (PARTITION BY name, coalesce("group", ''), pe ORDER BY t0, t1) AS k
    FROM training_rows
    WHERE kind = 'collective' AND t0 IS NOT NULL
),
met AS (  -- the call's two latest starts (max(t0, 2)): one rank arrived last when they differ
    SELECT name, grp, k, max(t0) AS t_last, min(t0) AS t_first, arg_max(pe, t0) AS last_pe,
           (max(t0, 2))[2] < max(t0) AS one_last
    FROM calls
    GROUP BY name, grp, k
    HAVING count(*) >= 2
)
SELECT c.name, c.pe,
       count(*) AS calls,
       count(*) FILTER (WHERE m.one_last AND m.last_pe = c.pe) AS last,
       CAST(coalesce(sum(m.t_last - m.t_first) FILTER (WHERE m.one_last AND m.last_pe = c.pe), 0) AS BIGINT)
           AS wait_ns
FROM calls c JOIN met m ON c.name = m.name AND c.grp = m.grp AND c.k = m.k
GROUP BY c.name, c.pe
ORDER BY c.name, c.pe
