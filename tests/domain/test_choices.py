"""A typed reply to a question with options: a number picks the option."""

from __future__ import annotations

import pytest

from kun.domain.choices import NotAnOption, chosen_answer, numbered

COLOURS = ("red", "green", "blue")


def test_options_are_numbered_from_one() -> None:
    assert numbered(COLOURS) == ["1. red", "2. green", "3. blue"]


@pytest.mark.parametrize(
    ("reply", "options", "answer"),
    [
        ("2", COLOURS, "green"),
        (" 3 ", COLOURS, "blue"),
        ("green", COLOURS, "green"),
        ("the blue one", COLOURS, "the blue one"),
        ("2", (), "2"),  # no options: a free answer
        ("20", ("10", "20"), "20"),  # an option that reads as the number
        ("1", ("10", "20"), "10"),
        ("\u00b2", COLOURS, "\u00b2"),  # not an ASCII number
    ],
)
def test_a_reply_stands_for_an_option_or_itself(
    reply: str, options: tuple[str, ...], answer: str
) -> None:
    assert chosen_answer(reply, options) == answer


@pytest.mark.parametrize("reply", ["0", "4", "99"])
def test_a_number_that_names_no_option_is_refused(reply: str) -> None:
    with pytest.raises(NotAnOption, match="type 1 to 3, or your own answer"):
        chosen_answer(reply, COLOURS)
