"""The modules of bench/replay_fidelity (its docstring says what it measures and how)."""
