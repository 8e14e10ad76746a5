"""Keystrokes to the name (recall/analysis/effort.py), pinned on small hand-made cases: where a
sequence first reaches #1 and the top 3, the groups' numbers and the k-curve, the keystrokes
saved, the ceiling over a corpus's names, and the diff of two runs."""

import re

import pytest

from recall.analysis.effort import (
    Chances,
    Effort,
    EffortCounts,
    EffortRun,
    Reach,
    TypedSequence,
    certain,
    counts,
    effort_diff,
    effort_run,
    reach,
    typed_sequences,
)
from recall.analysis.keystroke_ceiling import TypedTexts, ceiling_chances, effort
from recall.analysis.stats import interval
from recall.inputs.keystrokes import TypingRow
from recall.render.effort import LEGEND_CHAR_PX, effort_html, k_curve, render_effort

BIND = TypedSequence("gin", "prefix", "bind", ("b", "bi", "bin", "bind"))
ANSWERS = {
    "b": ("bool", "bytes", "bind"),
    "bi": ("bind", "binding"),
    "bin": ("binding", "bind"),
    "bind": ("bind",),
}


def _answers(repo: str, query: str) -> tuple[str, ...]:
    return ANSWERS[query]


def test_the_first_step_at_number_one_and_in_the_top_3():
    r = reach(BIND, _answers)
    assert (r.first, r.top3) == (2, 1)


def test_a_source_never_first_within_its_sequence_is_never():
    r = reach(BIND, lambda repo, query: ("bool",))
    assert (r.first, r.top3) == (None, None)


def test_counts_curve_and_keystrokes_saved_of_two_sequences():
    """bind at #1 after 2 of its 4 keystrokes saves 2; a 6-letter name never first saves
    none: 2 saved of 10 typed, one sequence of two at #1 from k = 2 on."""
    other = TypedSequence("gin", "prefix", "router", ("r", "ro"))
    c = counts([(BIND, certain(reach(BIND, _answers), 4)), (other, Chances((0, 0), (0, 1)))])
    assert (c.n, c.first, c.first_pct, c.first_keys) == (2, 1, 50.0, 2.0)
    assert (c.top3, c.top3_keys) == (2, 1.5)
    assert (c.saved, c.typed, c.saved_pct) == (2, 10, 20.0)
    assert c.curve == (0.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0)


def test_the_ceiling_gives_each_tied_name_its_share_and_an_exact_match_its_own_step():
    """Of bind, binding, bindings and bool: at b four names could be typed toward (1/4), at
    bi three (1/3), bin three, and bind typed whole is bind alone (1): first at each step
    the growth of that chance."""
    texts = TypedTexts(["bind", "binding", "bindings", "bool_x"])
    chances = ceiling_chances(BIND, texts)
    assert chances.first == pytest.approx((1 / 4, 1 / 3 - 1 / 4, 0, 1 - 1 / 3))
    assert sum(chances.top3) == pytest.approx(1.0) and chances.top3[0] == pytest.approx(3 / 4)


def test_the_ceiling_counts_only_names_the_same_way_types():
    """`starts` of bind_json is b, bj: names whose starts begin so, not names that begin so."""
    seq = TypedSequence("gin", "starts", "bind_json", ("b", "bj"))
    texts = TypedTexts(["bind_json", "bytes_list", "bindings"])  # bindings: one word
    assert ceiling_chances(seq, texts).first == pytest.approx((1 / 2, 1 / 2))


def test_a_diff_lists_the_sequences_that_need_more_keystrokes_with_the_step_they_had():
    before = [reach(BIND, _answers)]
    after = [reach(BIND, lambda repo, query: ANSWERS[query] if query == "bind" else ("x",))]
    d = effort_diff("base", "new", [BIND], before, after)
    assert (d.more, d.fewer, d.same) == (1, 0, 0)
    change = d.more_keys[0]
    assert (change.source, change.base_keys, change.base_query, change.new_keys) == (
        "bind", 2, "bi", 4,
    )  # fmt: skip
    assert effort_diff("base", "new", [BIND], before, before).more == 0


def test_a_sequence_that_needs_more_keys_or_leaves_the_top_3_is_a_loss_with_its_verdicts():
    """Issue 44 item 8: a typing diff did not gate: 16 sequences needed more keystrokes and
    #1 reached fell from 52 to 41, and --fail-on-loss exited 0."""
    never = reach(BIND, lambda repo, query: ("x", "y", "z", "bind"))  # never #1, never top 3
    later = reach(BIND, lambda repo, query: ANSWERS[query] if query == "bind" else ("x",))
    before = [reach(BIND, _answers)]
    gone = effort_diff("base", "new", [BIND], before, [never])
    assert gone.is_loss and gone.more == 1 and gone.more_keys[0].new_keys is None
    ((top3,),) = [gone.lost_top3]
    assert (top3.base_keys, top3.base_query, top3.new_keys) == (1, "b", None)
    verdict = gone.verdict
    assert (verdict.first.gained, verdict.first.lost, verdict.top3.lost) == (0, 1, 1)
    assert verdict.summary == (
        "verdict on sequences (McNemar's exact test, two-sided, alpha 0.05): #1 reached no "
        "significant change (0 gained, 1 lost, p=1); top 3 reached no significant change "
        "(0 gained, 1 lost, p=1)"
    )
    assert gone.counts_line() == (
        "sequences: 1 need more keystrokes to #1 (1 never reach it now), 0 fewer, 0 the same; "
        "1 no longer reach the top 3"
    )
    slower = effort_diff("base", "new", [BIND], before, [later])
    assert slower.is_loss and slower.lost_top3 == () and slower.verdict.first.lost == 0
    assert not effort_diff("base", "new", [BIND], before, before).is_loss
    back = effort_diff("base", "new", [BIND], [never], before)
    assert not back.is_loss and (back.verdict.first.gained, back.verdict.top3.gained) == (1, 1)


def test_the_section_maps_answers_back_and_a_self_diff_shows_no_change():
    rows = [TypingRow("gin", "prefix", i, q, "bind") for i, q in enumerate(BIND.queries, 1)]
    assert typed_sequences(rows) == [BIND]
    names = {"gin": ["bind", "binding", "bool_x", "bytes"]}
    section = effort(rows, [("a", _answers), ("b", _answers)], names, {"gin": "go"},
                     baseline=True)  # fmt: skip
    assert section.runs[0].counts == section.runs[1].counts
    assert section.runs[0].by_language["go"].first_keys == 2.0
    assert (section.diffs[0].more, section.diffs[0].same) == (0, 1)
    assert (section.sequences, section.steps, section.prompts) == (1, 4, 4)
    assert section.to_json()["ceiling"]["label"] == "ceiling"


def test_a_sequence_the_model_does_not_type_has_no_ceiling_and_is_named():
    """Issue 42 items 7 and 10: `T`, `Te` toward a name whose prefix way types `c`, `co`
    gave no name to count (k = 0, a ZeroDivisionError after every finder ran); `z`, `zq`
    toward a name sampling could not pick (`Bind`, four letters) gave the source alone
    (k = 1): a certain ceiling, 100% at 1.50 keys."""
    rows = [
        TypingRow("gin", "prefix", 1, "T", "Context"),
        TypingRow("gin", "prefix", 2, "Te", "Context"),
        TypingRow("gin", "prefix", 1, "z", "Bind"),
        TypingRow("gin", "prefix", 2, "zq", "Bind"),
        TypingRow("gin", "starts", 1, "b", "Bind"),  # one word: the starts way does not apply
        *(TypingRow("gin", "prefix", i, q, "bind") for i, q in enumerate(BIND.queries, 1)),
    ]  # fmt: skip
    names = {"gin": ["bind", "binding", "bool_x", "bytes", "Context", "Bind"]}
    section = effort(rows, [("a", _answers_or_none)], names, {"gin": "go"}, baseline=False)
    assert [(s.source, s.sequence, s.typed) for s in section.left_out.first] == [
        ("Context", "prefix", "Te"), ("Bind", "prefix", "zq"), ("Bind", "starts", "b"),
    ]  # fmt: skip
    assert section.runs[0].counts.n == 4 and section.ceiling.counts.n == 1
    assert section.ceiling.counts.first == pytest.approx(1.0)  # bind, typed whole by bind
    assert section.to_json()["left_out"]["count"] == 3


def _answers_or_none(repo: str, query: str) -> tuple[str, ...]:
    return ANSWERS.get(query, ())


def test_a_name_sampling_could_not_pick_typed_as_the_model_types_it_counts_as_one_more():
    """Bind (four letters: no sampled name) typed b, bi: the names typed toward are the
    eligible ones and Bind itself."""
    seq = TypedSequence("gin", "prefix", "Bind", ("b", "bi"))
    texts = TypedTexts(["binding", "bool_x", "Bind"])
    assert ceiling_chances(seq, texts).first == pytest.approx((1 / 3, 1 / 2 - 1 / 3))


def test_the_k_curve_s_legend_widens_for_a_base_label_so_no_label_is_cut_off():
    curve = tuple(float(k) for k in range(1, 11))
    counts = EffortCounts(10, 1, 10.0, 1.0, 1, 10.0, 1.0, 0, 10, 0.0, curve)

    def run(label: str) -> EffortRun:
        return EffortRun(label, counts, {}, {}, {})

    short = k_curve([run("fzy")], None)
    label = "base origin/main~12 (d8ba8c6f8d83)"
    long = k_curve([run(label)], run("ceiling"))
    width = int(re.search(r'<svg [^>]*width="(\d+)"', long)[1])  # type: ignore[index]
    assert 'width="830"' in short  # the legend's least width
    text_x = float(re.search(rf'<text x="([\d.]+)" y="\d+">{re.escape(label)} ', long)[1])  # type: ignore[index]
    assert text_x + LEGEND_CHAR_PX * len(f"{label} (10.0% by 10)") <= width


def test_the_typing_ceiling_has_a_95_percent_range_as_the_name_sets_and_flags_a_finder_beyond():
    """issue 43: the typing ceiling's #1 and top 3 counts get the name sets' range (the
    exact Poisson-binomial of each sequence's chance of getting there), shown in the report
    and on the page, so a finder above it is flagged."""
    sequences = [TypedSequence("gin", "prefix", f"bind{i}", ("b", "bi")) for i in range(10)]
    halves = [Chances((0.25, 0.25), (1.0, 0.0)) for _ in sequences]  # #1 by bi: 1/2 each
    ceiling = effort_run("ceiling", sequences, halves, {"gin": "go"}, ranged=True)
    assert ceiling.counts.first_ci == interval([0.5] * 10) == (2, 8)  # Binomial(10, 1/2)
    assert ceiling.counts.top3_ci == (10, 10)
    assert ceiling.by_repo["gin"].first_ci == (2, 8)

    def finder(label: str, hits: int) -> EffortRun:
        reached = [certain(Reach(2 if i < hits else None, 1), 2) for i in range(10)]
        return effort_run(label, sequences, reached, {"gin": "go"})

    section = Effort(10, 20, 2, (finder("within", 8), finder("beyond", 9)), ceiling)
    assert section.runs[0].counts.first_ci is None
    text = render_effort(section, markdown=False)
    rows: dict[str, str] = {}
    for line in text:  # each label's first line: its row of the effort table
        rows.setdefault(line.split()[0] if line.split() else "", line)
    assert "5 (50.0%) [2-8]" in rows["ceiling"] and "10 (100.0%) [10-10]" in rows["ceiling"]
    assert "9 (90.0%)^" in rows["beyond"] and "8 (80.0%)^" not in rows["within"]
    assert any(line.startswith("^ above the ceiling's 95% range") for line in text)
    assert "50.0 [20.0-80.0] / 1.50 / 35.0" in rows["gin"] and "90.0^ / 2.00" in rows["gin"]
    page = "".join(effort_html(section))
    assert "<td>5 (50.0%) [2-8]</td>" in page and "<td>9 (90.0%)^</td>" in page
    calm = render_effort(Effort(10, 20, 2, (finder("within", 8),), ceiling), markdown=True)
    assert not any("^" in line for line in calm)
