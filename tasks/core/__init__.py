"""What every job uses: task runners, provenance, atomic files, tokens."""
