"""Repetition detection (SPEC §7.2): normalising, Dice at its edges, the tracker."""

from __future__ import annotations

import pytest

from kun.domain.repetition import (
    RepetitionSettings,
    RepetitionTracker,
    bigram_dice,
    is_repeat,
    normalize,
)

ALPHA = "abcdefghijklmnopqrstu"  # 21 distinct letters: 20 distinct bigrams


def test_normalize_drops_space_punctuation_and_symbols_in_every_script() -> None:
    assert normalize("好的,我这就去改。") == normalize("好的 我这就去改") == "好的我这就去改"
    assert normalize("OK — I'll fix it NOW!!! 🚀 $5") == "okillfixitnow5"
    assert normalize("\u3000a\u00a0b\u2028c") == "abc"


def test_normalize_lowers_each_character_alone() -> None:
    odos = "\u039f\u0394\u039f\u03a3"  # Greek capitals; lowered alone, no final sigma
    assert normalize(odos + " x") == normalize(odos + "x") == "\u03bf\u03b4\u03bf\u03c3x"


def test_dice_is_two_shared_over_the_bigram_total() -> None:
    assert bigram_dice("night", "nacht") == pytest.approx(2 * 1 / 8)
    assert bigram_dice("aaaa", "aa") == pytest.approx(2 * 1 / 4)


def test_dice_of_exactly_the_threshold_is_a_repeat() -> None:
    at = ALPHA[:18] + "xyz"  # shares 17 of 20 bigrams: 34 / 40
    below = ALPHA[:17] + "wxyz"  # shares 16: 32 / 40
    assert bigram_dice(ALPHA, at) == 0.85
    assert is_repeat(ALPHA, at)
    assert bigram_dice(ALPHA, below) == 0.8
    assert not is_repeat(ALPHA, below)


def test_eleven_characters_are_too_short_for_dice_twelve_are_not() -> None:
    assert bigram_dice("abcdefghijk", "abcdefghijx") == 0.9
    assert not is_repeat("abcdefghijk", "abcdefghijx")
    assert is_repeat("abcdefghijkl", "abcdefghijkx")
    assert not is_repeat("abcdefghijk", "abcdefghijkl!")


def test_short_texts_still_repeat_when_equal_once_normalised() -> None:
    assert is_repeat("OK.", "ok")
    assert not is_repeat("OK.", "no")


def test_the_thresholds_are_settings() -> None:
    loose = RepetitionSettings(dice=0.8, min_chars=4)
    assert is_repeat(ALPHA, ALPHA[:17] + "wxyz", loose)
    assert is_repeat("abcdef", "abcdex", loose)
    assert not is_repeat("abcdef", "abcdex")


def _run(tracker: RepetitionTracker, texts: list[str]) -> list[str]:
    actions = []
    for text in texts:
        tracker, verdict = tracker.observe(text)
        actions.append(verdict.action)
    return actions


def test_repeats_one_to_three_recover_and_the_fourth_stops() -> None:
    status = "I will now fix the failing test in parser.py."
    variants = [status, status.upper(), status + "!!", " " + status, status.lower(), status]
    assert _run(RepetitionTracker(), variants) == [
        "none", "recover", "recover", "recover", "stop", "stop",
    ]  # fmt: skip


def test_the_recovery_instruction_names_the_attempt_and_the_way_out() -> None:
    tracker, _ = RepetitionTracker().observe("same status report here")
    tracker, verdict = tracker.observe("Same status report here.")
    assert verdict.action == "recover" and verdict.repeats == 1
    assert "repeat 1 of at most 3" in verdict.instruction
    assert "update_goal" in verdict.instruction and "call a tool" in verdict.instruction


def test_a_different_reply_starts_the_count_again() -> None:
    a, b = "Working on the parser module now.", "All 41 tests pass; the goal is done."
    assert _run(RepetitionTracker(), [a, a, a, b, b, b, b, b]) == [
        "none", "recover", "recover", "none", "recover", "recover", "recover", "stop",
    ]  # fmt: skip


def test_max_repeats_zero_stops_on_the_first_repeat() -> None:
    tracker = RepetitionTracker(settings=RepetitionSettings(max_repeats=0))
    assert _run(tracker, ["same same same", "same same same"]) == ["none", "stop"]
