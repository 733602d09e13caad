"""What the tests, the reliability runs (tests/reliability) and the benchmarks (bench/) share:
local databases seen from outside the service, the processes they start, and the ports those
listen on. The one part of tests/ that bench/ may import."""
