"""Conversations kept in memory while a level runs: a turn is sent with the messages before it and the
answers the server gave to them (only the answer's text, not its reasoning), and its own answer is kept
for the next turn. Nothing of it is written anywhere; it goes when the level's sender does."""

from __future__ import annotations

from dataclasses import replace

import aiohttp

from seatrial.load.client import Endpoint, send
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import SendFn
from seatrial.load.workloads.spec import Messages, RequestSpec, is_messages


class Conversations:
    """Each session's messages so far (its turns and their answers)."""

    def __init__(self) -> None:
        self.history: dict[int, Messages] = {}

    def prompt(self, spec: RequestSpec) -> Messages:
        assert spec.session is not None and is_messages(spec.prompt)
        return self.history.get(spec.session, []) + spec.prompt

    def answered(self, spec: RequestSpec, prompt: Messages, answer: str) -> None:
        assert spec.session is not None
        self.history[spec.session] = [*prompt, {"role": "assistant", "content": answer}]


def make_sender(http: aiohttp.ClientSession, ep: Endpoint) -> SendFn:
    """The level's ``send(spec, record)``: the streaming client, with a conversation's turns sent in their
    conversation (a turn of messages that names its ``session``). One per level (sessions are numbered per
    level)."""
    talks = Conversations()

    async def sender(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
        if spec.session is None or not is_messages(spec.prompt):
            return await send(http, ep, spec, rec)
        prompt, answer = talks.prompt(spec), list[str]()
        await send(http, ep, replace(spec, prompt=prompt), rec, answer)
        talks.answered(spec, prompt, "".join(answer))
        return rec

    return sender
