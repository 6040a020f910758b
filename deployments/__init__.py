"""What goes with prefect.yaml: parameter presets and `python -m deployments.serve` (see README.md here)."""
