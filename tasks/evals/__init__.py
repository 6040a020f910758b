"""Evaluation runs shared by every benchmark: run config with roles, plan, outputs, dry-run estimate."""
