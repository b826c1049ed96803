-- annotations_spans: user annotations (record_function ranges, `## forward ##`, ...) on the CPU
-- (cat user_annotation) and on the GPU timeline (cat gpu_user_annotation), with the device rows
-- each covers: a GPU annotation covers the device rows of its rank that run inside it; a CPU
-- annotation covers the device rows launched from inside it on its thread (by `msg`). Nested
-- annotations each count the rows they cover. ProfilerStep rows are steps, not annotations.
-- grain: one row per (pe, side, name).
-- columns:
--   pe         int32        global rank
--   side       text         cpu | gpu
--   name       text         annotation name
--   spans      int64 count  annotation rows
--   total_ns   int64 ns     sum of their durations
--   max_ns     int64 ns     longest
--   kernels    int64 count  device rows covered (see above)
--   kernel_ns  int64 ns     sum of those rows' durations
-- merge: keys(pe, side, name) sum(spans, total_ns, kernels, kernel_ns) max(max_ns)
WITH ann AS (
    SELECT row_number() OVER () AS id, pe, tid, t0, t1, name,
           CASE WHEN cat = 'gpu_user_annotation' THEN 'gpu' ELSE 'cpu' END AS side
    FROM events
    WHERE cat IN ('user_annotation', 'gpu_user_annotation') AND t1 >= t0 AND name NOT LIKE 'ProfilerStep#%'
),
dev AS (SELECT pe, t0, t1, msg FROM events WHERE stream IS NOT NULL AND kind IN ('exec', 'collective')),
launch AS (SELECT pe, tid, t0, msg FROM events WHERE stream IS NULL AND msg IS NOT NULL AND kind = 'exec'),
gpu_k AS (
    SELECT a.id, count(*) AS kernels, sum(d.t1 - d.t0) AS kernel_ns
    FROM ann a JOIN dev d ON a.side = 'gpu' AND d.pe = a.pe AND d.t0 >= a.t0 AND d.t1 <= a.t1
    GROUP BY a.id
),
cpu_k AS (
    SELECT a.id, count(*) AS kernels, sum(d.t1 - d.t0) AS kernel_ns
    FROM ann a
    JOIN launch l ON a.side = 'cpu' AND l.pe = a.pe AND l.tid = a.tid AND l.t0 >= a.t0 AND l.t0 < a.t1
    JOIN dev d ON d.msg = l.msg
    GROUP BY a.id
)
SELECT a.pe, a.side, a.name, count(*) AS spans, CAST(sum(a.t1 - a.t0) AS BIGINT) AS total_ns,
       max(a.t1 - a.t0) AS max_ns,
       CAST(sum(coalesce(g.kernels, c.kernels, 0)) AS BIGINT) AS kernels,
       CAST(sum(coalesce(g.kernel_ns, c.kernel_ns, 0)) AS BIGINT) AS kernel_ns
FROM ann a LEFT JOIN gpu_k g ON g.id = a.id LEFT JOIN cpu_k c ON c.id = a.id
GROUP BY a.pe, a.side, a.name
ORDER BY a.pe, a.side, total_ns DESC, a.name
