"""``seatrial compare``: run folders against each other (``runs``: per phase and level with intervals, or as
deployments: ``deployments``). It reads what bench, accept and experiment wrote, through ``experiment``'s readers
and decision rules; nothing below it imports it."""
