"""SPEC §7.2 invariants of repetition detection, as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kun.domain.repetition import (
    RepetitionSettings,
    RepetitionTracker,
    bigram_dice,
    is_repeat,
    normalize,
)

texts = st.text(max_size=80)
noise = st.text(
    alphabet=st.characters(categories=("Zs", "Zl", "Zp", "Po", "Ps", "Pe", "Pd", "Sm", "Sc", "So")),
    max_size=5,
)


@given(texts)
def test_normalize_is_idempotent(text: str) -> None:
    assert normalize(normalize(text)) == normalize(text)


@given(texts, texts)
def test_dice_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert bigram_dice(a, b) == bigram_dice(b, a)
    assert 0.0 <= bigram_dice(a, b) <= 1.0
    assert is_repeat(a, b) == is_repeat(b, a)


@given(texts)
def test_dice_is_one_on_equal_strings_and_a_text_repeats_itself(text: str) -> None:
    assert bigram_dice(text, text) == 1.0
    assert is_repeat(text, text)


@given(texts, st.lists(noise, min_size=1, max_size=6))
def test_repetition_ignores_case_punctuation_symbols_and_whitespace(
    text: str, inserts: list[str]
) -> None:
    noisy = "".join(f"{c}{inserts[i % len(inserts)]}" for i, c in enumerate(text.upper()))
    assert normalize(noisy) == normalize(text.upper())
    assert is_repeat(text.upper(), noisy)


@given(st.text(max_size=11), st.text(max_size=40))
def test_short_texts_repeat_only_when_equal_once_normalised(short: str, other: str) -> None:
    if len(normalize(short)) < 12:
        assert is_repeat(short, other) == (normalize(short) == normalize(other))


@given(st.integers(min_value=0, max_value=6), texts.filter(lambda t: normalize(t) != ""))
def test_the_tracker_stops_exactly_on_the_repeat_after_max(limit: int, text: str) -> None:
    tracker = RepetitionTracker(settings=RepetitionSettings(max_repeats=limit))
    actions = []
    for _ in range(limit + 2):
        tracker, verdict = tracker.observe(text)
        actions.append(verdict.action)
    assert actions == ["none"] + ["recover"] * limit + ["stop"]
