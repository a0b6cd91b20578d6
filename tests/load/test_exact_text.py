"""``exact_text``: a prompt of exactly n server tokens where the decode/encode round trip merges or
splits tokens at the cut, including a cut where the adjustment only goes round in a circle."""

from __future__ import annotations

import asyncio

import pytest

from seatrial.errors import ServerError
from seatrial.load.tokenize import exact_text

POOL = list(range(100))


class Merging:
    """Texts are the ids joined by spaces. A cut at 10 counts 6 ids as 7, 5 as 4 and 7 as 8 (so the
    window goes 6, 5, 7, 6, ...); every other cut counts what it holds; with ``never`` no window counts 6."""

    def __init__(self, never: bool = False) -> None:
        self.never, self.calls = never, 0

    async def encode(self, text: str) -> list[int]:
        return [int(t) for t in text.split()]

    async def decode(self, ids: list[int]) -> str:
        return " ".join(map(str, ids))

    async def count(self, text: str) -> int:
        self.calls += 1
        ids = await self.encode(text)
        if self.never:
            return 2 * len(ids) + 1  # odd: never 6
        return {6: 7, 5: 4, 7: 8}.get(len(ids), len(ids)) if ids[0] == 10 else len(ids)


def test_a_cut_whose_window_goes_round_moves_on_one_token() -> None:
    tok = Merging()
    assert asyncio.run(exact_text(tok, POOL, 10, 6)) == "11 12 13 14 15 16"
    assert tok.calls == 4  # three windows at 10 (6, 5, 7: the next, 6, was tried), then one at 11


def test_a_cut_that_works_is_kept() -> None:
    assert asyncio.run(exact_text(Merging(), POOL, 20, 6)) == "20 21 22 23 24 25"


def test_no_cut_works_names_what_was_tried() -> None:
    with pytest.raises(ServerError, match=r"exactly 6 tokens from 3 cuts \(window -> count: .*6->13"):
        asyncio.run(exact_text(Merging(never=True), POOL, 0, 6, shifts=3))
