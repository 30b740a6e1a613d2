"""Reading a model's stream line by line with a bound on each line."""

from __future__ import annotations

import pytest

from maps_autogen._util._limits import LineTooLong, capped_lines


def test_lines_are_reassembled_across_chunks() -> None:
    chunks = ["data: {\"a\"", ": 1}\r\n\ndata: [DO", "NE]\n", "tail"]
    assert list(capped_lines(chunks, limit=100)) == ['data: {"a": 1}', "", "data: [DONE]", "tail"]


def test_a_line_that_never_ends_is_refused_once_over_the_limit() -> None:
    read: list[int] = []

    def endless():
        for number in range(10_000):
            read.append(number)
            yield "x" * 1000  # no newline, ever

    with pytest.raises(LineTooLong):
        list(capped_lines(endless(), limit=50_000))
    assert len(read) == 51  # stopped as soon as the line passed the limit, not at the end


def test_long_lines_within_the_limit_pass() -> None:
    assert list(capped_lines(["y" * 40, "y" * 40 + "\n"], limit=100)) == ["y" * 80]
