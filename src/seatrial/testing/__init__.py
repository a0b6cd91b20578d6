"""Test doubles shipped with seatrial, for its tests, its benchmarks and anyone checking a client against a
known truth: ``server`` (a synthetic OpenAI-compatible token server with exact timing, chosen faults and
real Prometheus metrics) and ``batching`` (the continuous-batching law that server can serve). Nothing in
the product's commands imports them."""
