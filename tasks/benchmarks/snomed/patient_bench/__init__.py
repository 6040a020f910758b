"""A test bench for patient simulators: fixed questions per case, each patient's answers scored by rules."""
