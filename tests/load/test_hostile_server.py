"""A server's nonsense (issue 42, items 9-11) is a failed request with its reason, or exit 4 when the server
cannot be used at all; never a crash (exit 70) and never the levels already measured lost."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from tests.clirun import invoke
from tests.hostile import Hostile, serve

BENCH = ["--input-len", "4", "--output-len", "4", "--requests", "2", "--warmup", "0", "--no-gpu-telemetry",
         "--stall-timeout", "5"]  # fmt: skip


def event(obj: object) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


UNUSABLE = {  # the server cannot be used: exit 4 with the reason, before any request
    "models not JSON": (Hostile(models=b"<html>"), "is not JSON"),
    "models a list": (Hostile(models=[1, 2]), "is not a model list"),
    "models data 5": (Hostile(models={"data": 5}), "is not a model list"),
    "models non-UTF-8 id": (Hostile(models=b'{"data":[{"id":"\xff\xfe"}]}'), "is not JSON"),
    "models null id": (Hostile(models={"data": [{"id": None}]}), "id is not a name: None"),
    "tokenize bad JSON": (Hostile(tokenize=b"{oops"), "/tokenize answered what is not a JSON object"),
    "tokenize a list": (Hostile(tokenize=[1, 2]), "/tokenize answered what is not a JSON object"),
    "tokenize string tokens": (Hostile(tokenize={"tokens": ["a", "b"], "count": 2}), "no list of token ids"),
    "tokenize inconsistent count": (Hostile(tokenize={"tokens": [1, 2, 3, 4], "count": 9}), "inconsistent"),
    "tokenize too few tokens": (Hostile(tokenize={"tokens": [1, 2, 3], "count": 3}), "too few to build"),
    "every request 401": (Hostile(status=401), "HTTP 401"),
    "every request 403": (Hostile(status=403), "HTTP 403"),
}


@pytest.mark.parametrize("case", sorted(UNUSABLE))
def test_an_unusable_server_is_exit_4_with_its_reason(case: str) -> None:
    hostile, fragment = UNUSABLE[case]
    with serve(hostile) as url:
        r = invoke(["bench", "--url", url, *BENCH])
    assert r.code == 4 and fragment in r.output, r.output


BAD_CHUNKS = {  # the second token's event of every request in the last level
    "choices [null]": (event({"choices": [None]}), "choices[0] is null"),
    "choices ['xyz']": (event({"choices": ["xyz"]}), "'choices[0]' is not an object"),
    "choices 5": (event({"choices": 5}), "'choices' is not a list"),
    "usage a string": (event({"choices": [{"text": " a"}], "usage": "x"}), "'usage' is not an object"),
    "usage a list": (event({"choices": [{"text": " a"}], "usage": [1]}), "'usage' is not an object"),
    "usage a float": (event({"choices": [{"text": " a"}], "usage": {"completion_tokens": 2.5}}), "not a token count"),
    "usage 10^30": (b'data: {"choices":[{"text":" a"}],"usage":{"completion_tokens":1' + b"0" * 30 + b"}}\n\n",
                    "not a token count"),
    "usage jumps to 10^9": (event({"choices": [{"text": " a"}], "usage": {"completion_tokens": 10**9}}),
                            "more than the 4 asked"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_CHUNKS))
def test_a_bad_chunk_in_the_last_level_fails_its_requests_and_keeps_the_levels_before(
    case: str, tmp_path: Path
) -> None:
    chunk, fragment = BAD_CHUNKS[case]
    out, js = tmp_path / "run", tmp_path / "s.json"
    with serve(Hostile(bad_chunk=chunk, bad_from=2)) as url:  # level C=1 gets 2 good requests, C=2 bad
        r = invoke(["bench", "--url", url, *BENCH, "--concurrency", "1,2", "--out", str(out), "--json", str(js)])
    assert r.code == 1, r.output
    for summary in (json.loads((out / "summary.json").read_text()), json.loads(js.read_text())):
        first, last = summary["levels"]
        assert first["requests_ok"] == 2 and first["valid"] is True
        assert last["requests_failed"] == 2 and last["valid"] is False
    rows = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    errors = [r["error"] for r in rows if r["phase"] != "cooldown"]
    assert errors[:2] == [None, None] and all(fragment in e for e in errors[2:]), errors


def test_accept_and_capacity_say_http_401_when_every_request_is_refused() -> None:
    with serve(Hostile(status=401)) as url:
        accept = invoke(["accept", "--url", url, "--trials", "basic", "--scale", "small"])
        capacity = invoke(["capacity", "--url", url, "--input-len", "4", "--output-len", "4",
                           "--slo", "ttft_ms:1000", "--start", "200", "--no-gpu-telemetry"])  # fmt: skip
    for r in (accept, capacity):
        assert r.code == 4 and "HTTP 401" in r.output, r.output
