"""ThReadMed-QA: multi-turn r/AskDocs threads answered by a model and graded by a judge.

Its `Benchmark` record is `benchmark.THREADMED` (listed in tasks/benchmarks/registry.py); README.md
says where each piece is.
"""
