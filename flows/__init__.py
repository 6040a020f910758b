"""Prefect flows: orchestration only. Each module reads like a table of contents."""
