"""The realistic Pushshift dump generator used by the demo, the tests and the benchmarks."""
