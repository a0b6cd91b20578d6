"""Stage 2, "Network / NVMe / Storage OK?": ``seatrial io``'s trials (net.tcp, net.nccl, storage.read,
storage.write, storage.load, kv.disk, kv.object) on local or SSH nodes, each ending in a verdict with its
figures and every repeat (see ``io/registry.py`` for the list, ``io/judge.py`` for the rule).

Nothing is imported here: `seatrial io --help` stays light (tests/cli/test_startup.py)."""
