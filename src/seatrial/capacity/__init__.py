"""``seatrial capacity``: the highest load whose SLO attainment's lower bound meets the target (probe, ramp,
bisect), per GPU and per dollar, and a production profile."""
