"""`paradise tune`: run a program, analyze its trace, try each proposed hint against the baseline in
interleaved rounds, keep only what a one-sided paired t-test on the rounds says is faster, and repeat on the
hinted program (docs/tune.md). runner: how a run is executed and timed; advisor: analysis and
what-if; stats: the test; calibrate: what-if learning from every run; record: tune.json; loop."""
