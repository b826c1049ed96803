-- events_latency_samples: the samples of the message cost fit in one bucket of the exec graph, as
-- counts per value, so that the buckets' counts merge into the run's exact quantiles.
-- reads: graph_part (one bucket of the exec graph: a reader step of paradise.events.graphread)
-- A delivery is a message exec with its sending exec and send time; the receiver was idle at the
-- send when its previous exec had ended (wall end) by then. Samples:
--   any_cross  delays (t0 - send_t0) of deliveries from another PE, delay >= 0 (idle or not)
--   cross      those whose receiver was idle
--   local      delays of deliveries on one PE whose receiver was idle, delay >= 0
--   busy_gap   gaps (t0 - pe_prev_t1, at least 0) before execs whose PE was busy: the exec's
--              message (or none) was there before the previous exec ended
-- params: $bits (0: values exact; else, in a bucket whose samples have more than $cap distinct
--         values, each value rounded to $bits significant bits, a relative error of at most
--         2^-$bits, so that a bucket has few distinct values: graphs above
--         execgraph.EXACT_QUANTILE_MAX_EXECS), $cap
-- grain: one row per sample x value (in a bucket); merged: the run's counts per value.
-- columns:
--   sample  (any_cross, cross, local or busy_gap)
--   value   (ns, the delay or gap, as a double; rounded when $bits > 0)
--   n       (count of samples of that value)
--   total   (ns, sum of the samples' exact values: the mean's numerator)
-- merge: group by sample, value; sum(n, total)
WITH d AS MATERIALIZED (
    SELECT t0 - send_t0 AS delay, src_pe <> pe AS other_pe, coalesce(pe_prev_end, -1) <= send_t0 AS idle
    FROM graph_part
    WHERE src_id IS NOT NULL AND send_t0 >= 0 AND t0 - send_t0 >= 0
),
s AS (
    SELECT 'any_cross' AS sample, delay AS v FROM d WHERE other_pe
    UNION ALL SELECT 'cross', delay FROM d WHERE idle AND other_pe
    UNION ALL SELECT 'local', delay FROM d WHERE idle AND NOT other_pe
    UNION ALL SELECT 'busy_gap', greatest(t0 - pe_prev_t1, 0) FROM graph_part
              WHERE pe_prev IS NOT NULL AND (src_id IS NULL OR send_t0 IS NULL OR send_t0 < 0
                                             OR send_t0 < pe_prev_end)
),
exact AS MATERIALIZED (SELECT sample, v, count(*) AS n, sum(v) AS total FROM s GROUP BY ALL),
rounded AS (SELECT $bits > 0 AND (SELECT count(*) FROM exact) > $cap AS yes)
SELECT sample,
       CASE WHEN NOT rounded.yes OR v < (1::BIGINT << $bits) THEN v::DOUBLE
            ELSE round(v / pow(2, floor(log2(v)) - $bits + 1)) * pow(2, floor(log2(v)) - $bits + 1) END AS value,
       sum(n)::BIGINT AS n, sum(total)::BIGINT AS total
FROM exact, rounded
GROUP BY ALL
