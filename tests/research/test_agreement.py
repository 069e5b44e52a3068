"""Agreement statistics against published worked examples and scipy, their invariants, and
``imagetime agree`` over label tables."""

from __future__ import annotations

import json
import math
import tempfile
from fractions import Fraction
from pathlib import Path

import pytest
import scipy.stats  # type: ignore[import-untyped]
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_imagetime.cli import main
from pytest_imagetime.research.agreement.stats import (
    accuracy,
    cohen_kappa,
    finite,
    kendall_tau,
    macro_prf,
    mae,
    point_biserial,
    spearman,
    weighted_kappa,
)
from pytest_imagetime.research.agreement.tables import TableError, detect_type, read_table
from pytest_imagetime.research.labels.columns import write_csv

# ---------------------------------------------------------------- published worked examples


def _from_table(cells: list[list[int]], classes: list[str]) -> tuple[list[str], list[str]]:
    """Two raters' labels from a contingency table: rows are rater A, columns rater B."""
    a: list[str] = []
    b: list[str] = []
    for i, row in enumerate(cells):
        for j, count in enumerate(row):
            a += [classes[i]] * count
            b += [classes[j]] * count
    return a, b


@pytest.mark.parametrize(("cells", "kappa"), [
    # Wikipedia, "Cohen's kappa", worked example: 50 grant proposals read by two readers,
    # 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    ([[20, 5], [10, 15]], Fraction(2, 5)),
    # The same article's two tables with equal agreement (60 of 100) but different
    # marginals: kappa 0.1304 (= 0.06 / 0.46) and 0.2593 (= 0.14 / 0.54).
    ([[45, 15], [25, 15]], Fraction(3, 23)),
    ([[25, 35], [5, 35]], Fraction(7, 27)),
])
def test_cohen_kappa_matches_published_examples(cells: list[list[int]], kappa: Fraction) -> None:
    a, b = _from_table(cells, ["yes", "no"])
    assert cohen_kappa(a, b) == pytest.approx(float(kappa), abs=1e-12)
    assert round(cohen_kappa(a, b), 4) in (0.4, 0.1304, 0.2593)


@pytest.mark.parametrize(("a", "b", "expected"), [
    # Maple's EssayTools[QuadraticWeightedKappa] help page, examples 1 and 2.
    ([9, 7, 8, 7, 6, 8, 3, 5, 10], [8, 8, 6, 6, 7, 6, 1, 4, 8], 0.758620689655172),
    ([9, 7, 8, 7, 6, 8, 3, 5, 10], [3, 5, 6, 6, 7, 6, 1, 4, 8], 0.438095238095238),
])
def test_quadratic_weighted_kappa_matches_published_examples(a: list[int], b: list[int],
                                                             expected: float) -> None:
    assert weighted_kappa(a, b) == pytest.approx(expected, abs=1e-12)
    # Maple takes the scale from the data; the scale cancels out of the ratio.
    assert weighted_kappa(a, b, lo=min(a + b), hi=max(a + b)) == pytest.approx(expected,
                                                                               abs=1e-12)


def test_spearman_matches_published_examples() -> None:
    # Wikipedia, "Spearman's rank correlation coefficient": IQ against hours of TV a week,
    # sum of d^2 = 194, rho = 1 - 6 * 194 / (10 * 99) = -29/165 = -0.175757...
    iq = [106, 86, 100, 101, 99, 103, 97, 113, 112, 110]
    tv = [7, 0, 27, 50, 28, 29, 20, 12, 6, 17]
    assert spearman(iq, tv) == pytest.approx(-29 / 165, abs=1e-12)
    # A course worksheet (Masaryk University, FAIS1): temperature against ice cream sales
    # on 12 days, r_s = 0.951048951.
    temperature = [14.2, 16.4, 11.9, 15.2, 18.5, 22.1, 19.4, 25.1, 23.4, 18.1, 22.6, 17.2]
    sales = [215, 325, 185, 332, 406, 522, 412, 614, 544, 421, 445, 408]
    assert spearman(temperature, sales) == pytest.approx(0.951048951, abs=1e-9)


def test_kendall_and_point_biserial_match_the_scipy_documentation() -> None:
    # scipy.stats.kendalltau's example (tau-b, with ties on both sides).
    assert kendall_tau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) == pytest.approx(
        -0.47140452079103173, abs=1e-12)
    # scipy.stats.pointbiserialr's example.
    assert point_biserial(list(range(7)), [False] * 3 + [True] * 4) == pytest.approx(
        0.8660254037844386, abs=1e-12)


def test_macro_prf_matches_the_scikit_learn_documentation() -> None:
    # precision_recall_fscore_support(..., average='macro'): (0.22, 0.33, 0.26).
    truth = ["cat", "dog", "pig", "cat", "dog", "pig"]
    guess = ["cat", "pig", "dog", "cat", "cat", "dog"]
    assert macro_prf(truth, guess) == pytest.approx((200 / 9, 100 / 3, 80 / 3))
    # classification_report's example: macro avg 0.50 0.56 0.49.
    p, r, f = macro_prf([0, 1, 2, 2, 2], [0, 0, 2, 2, 1])
    assert (round(p), round(r, 1), round(f, 1)) == (50, 55.6, 48.9)


def test_macro_prf_from_a_reconstructed_confusion_table() -> None:
    """A published report gives per-class precision, recall and support, not the labels;
    those fix each class's true positives and predictions, which is all macro averaging
    reads. Rebuilt from scikit-learn's classification_report example (class: precision,
    recall, support = 0: 0.50, 1.00, 1; 1: 0.00, 0.00, 1; 2: 1.00, 0.67, 3), the labels give
    back its macro row (0.50, 0.56, 0.49)."""
    published = {0: (0.50, 1.00, 1), 1: (0.00, 0.00, 1), 2: (1.00, 0.67, 3)}
    n = sum(support for _, _, support in published.values())
    hits = {c: round(recall * support) for c, (_, recall, support) in published.items()}
    predicted = {c: round(hits[c] / p) for c, (p, _, _) in published.items() if p}
    # The one class with precision 0 was predicted as often as the others leave over.
    predicted.update({c: n - sum(predicted.values()) for c in published if c not in predicted})
    truth = [c for c in published for _ in range(hits[c])]
    guess = list(truth)
    # The errors: each missed item paired with a wrong prediction of another class. Which
    # pairing does not matter: per-class counts are all that macro averaging reads.
    missed = [c for c, (_, _, s) in published.items() for _ in range(s - hits[c])]
    wrong = [c for c in published for _ in range(predicted[c] - hits[c])]
    assert len(missed) == len(wrong) and all(m != w for m, w in zip(missed, wrong, strict=True))
    truth += missed
    guess += wrong
    assert sorted(truth) == [0, 1, 2, 2, 2]
    p, r, f = macro_prf(truth, guess)
    assert (round(p / 100, 2), round(r / 100, 2), round(f / 100, 2)) == (0.50, 0.56, 0.49)


# ---------------------------------------------------------------- against scipy, and invariants

scores = st.integers(0, 10)
pairs = st.lists(st.tuples(scores, scores), min_size=2, max_size=60)


def _defined(value: float) -> bool:
    return not math.isnan(value)


@given(pairs)
def test_rank_correlations_equal_scipys(data: list[tuple[int, int]]) -> None:
    x, y = [p[0] for p in data], [p[1] for p in data]
    assume(len(set(x)) > 1 and len(set(y)) > 1)
    assert spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-9)
    assert kendall_tau(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic, abs=1e-9)


@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.booleans()), min_size=2, max_size=60))
def test_point_biserial_equals_scipys(data: list[tuple[float, bool]]) -> None:
    values, binary = [p[0] for p in data], [p[1] for p in data]
    assume(len(set(binary)) == 2 and max(values) - min(values) > 1e-6)
    expected = scipy.stats.pointbiserialr(binary, values).statistic
    assert point_biserial(values, binary) == pytest.approx(expected, abs=1e-9)


@given(pairs)
def test_quadratic_kappa_is_lins_concordance(data: list[tuple[int, int]]) -> None:
    """Quadratic weighted kappa equals 2 s_xy / (s_x^2 + s_y^2 + (mean x - mean y)^2) with
    1/n moments (Fleiss and Cohen 1973): an identity that checks the weights and the
    chance term at once."""
    x, y = [p[0] for p in data], [p[1] for p in data]
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in data) / n
    denominator = (sum((a - mx) ** 2 for a in x) / n + sum((b - my) ** 2 for b in y) / n
                   + (mx - my) ** 2)
    assume(denominator > 0)
    assert weighted_kappa(x, y) == pytest.approx(2 * sxy / denominator, abs=1e-9)


@given(pairs, st.sampled_from(["linear", "quadratic"]))
def test_weighted_kappa_bounds_and_symmetry(data: list[tuple[int, int]], weights: str) -> None:
    x, y = [p[0] for p in data], [p[1] for p in data]
    kappa = weighted_kappa(x, y, weights=weights)
    assume(_defined(kappa))
    assert kappa == pytest.approx(weighted_kappa(y, x, weights=weights), abs=1e-12)
    assert -1 - 1e-12 <= kappa <= 1 + 1e-12
    if len(set(x)) > 1:  # x against itself: perfect, unless x is constant (then undefined)
        assert weighted_kappa(x, x, weights=weights) == pytest.approx(1.0)


labels = st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd")), min_size=1,
                  max_size=60)


@given(labels)
def test_categorical_statistics_invariants(data: list[tuple[str, str]]) -> None:
    a, b = [p[0] for p in data], [p[1] for p in data]
    assert 0 <= accuracy(a, b) <= 100
    assert all(0 <= v <= 100 for v in macro_prf(a, b))
    assert macro_prf(a, a) == (100.0, 100.0, 100.0)
    kappa = cohen_kappa(a, b)
    if _defined(kappa):
        assert -1 - 1e-12 <= kappa <= 1 + 1e-12
        assert kappa == pytest.approx(cohen_kappa(b, a), abs=1e-12)
        # Kappa does not depend on the class names.
        rename = {"a": "d", "b": "c", "c": "b", "d": "a"}
        assert kappa == pytest.approx(cohen_kappa([rename[v] for v in a],
                                                  [rename[v] for v in b]), abs=1e-12)
    if len(a) >= 2 and len(set(a)) > 1:
        assert cohen_kappa(a, a) == pytest.approx(1.0)
    # Swapping reference and prediction swaps precision and recall.
    p, r, _ = macro_prf(a, b)
    q, s, _ = macro_prf(b, a)
    assert (p, r) == pytest.approx((s, q))


def test_undefined_statistics_are_nan_never_errors() -> None:
    for value in (cohen_kappa(["a"], ["a"]), cohen_kappa(["a", "a"], ["a", "a"]),
                  weighted_kappa([3], [3]), weighted_kappa([5, 5], [5, 5]),
                  spearman([1, 1, 1], [1, 2, 3]), kendall_tau([2, 2], [1, 3]),
                  spearman([1], [2]), point_biserial([1.0, 2.0], [True, True]),
                  accuracy([], []), mae([], []), *macro_prf([], [])):
        assert math.isnan(value)
    assert mae([1, 2], [3, 2]) == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        spearman([1, 2], [1])
    with pytest.raises(ValueError, match="outside the scale"):
        weighted_kappa([11], [3])


def test_a_report_shows_undefined_statistics_as_none() -> None:
    assert finite(cohen_kappa(["a", "a"], ["a", "a"])) is None
    assert finite(math.inf) is None
    assert finite(0.25) == 0.25


# ---------------------------------------------------------------- tables and types


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("a", "b", "expected"), [
    (["yes", "no"], ["True", "0"], ("categorical", None)),
    (["identity_drift", "none"], ["none", "none"], ("categorical", None)),
    (["yes", "unsure"], ["no", "yes"], ("categorical", None)),
    (["3", "10"], ["0", "7"], ("ordinal", None)),
    (["3", "11"], ["0", "7"], ("continuous", None)),
    (["0.5", "7.25"], ["yes", "no"], ("continuous", "b")),
    (["no", "yes"], ["4", "9"], ("continuous", "a")),
])
def test_label_types_are_detected(a: list[str], b: list[str],
                                  expected: tuple[str, str | None]) -> None:
    typing = detect_type(a, b)
    assert (typing.type, typing.binary_side) == expected


def test_a_forced_type_checks_the_labels() -> None:
    assert detect_type(["3", "4"], ["1", "2"], "categorical").type == "categorical"
    assert detect_type(["yes", "4"], ["1", "2"], "continuous").type == "continuous"
    with pytest.raises(TableError, match=r"'2\.5' in B is not an integer"):
        detect_type(["3", "4"], ["1", "2.5"], "ordinal")


def test_tables_read_csv_and_jsonl(tmp_path: Path) -> None:
    csv_table = read_table(_write(tmp_path / "a.csv", "\ufeffid, score\n1, 7\n\n2,\n"))
    assert csv_table.columns == ("id", "score")
    assert [dict(r) for r in csv_table.rows] == [{"id": "1", "score": "7"},
                                                {"id": "2", "score": ""}]
    assert csv_table.lines == (2, 4)
    jsonl = read_table(_write(tmp_path / "b.jsonl",
                              '{"id": 1, "score": 7.0, "ok": true}\n\n{"id": 2, "score": null}\n'))
    assert [dict(r) for r in jsonl.rows] == [{"id": "1", "score": "7", "ok": "true"},
                                            {"id": "2", "score": "", "ok": ""}]
    assert jsonl.lines == (1, 3)


cells = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)


@given(st.lists(st.tuples(cells, cells), min_size=1, max_size=8))
def test_any_text_survives_a_csv_round_trip(rows: list[tuple[str, str]]) -> None:
    """Notes with commas, quotes and line breaks come back as written (trimmed)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.csv"
        write_csv(path, ["id", "notes"], [{"id": f"r{i}", "notes": n} for i, (n, _) in
                                          enumerate(rows)])
        table = read_table(path)
    assert [r["notes"] for r in table.rows] == [n.strip() for n, _ in rows]
    assert [r["id"] for r in table.rows] == [f"r{i}" for i in range(len(rows))]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("bad.jsonl", '{"id": 1}\n{"id": 2,\n', "bad.jsonl: line 2: not JSON"),
    ("list.jsonl", '{"id": 1}\n[1, 2]\n', "list.jsonl: line 2: expected a JSON object"),
    ("short.csv", "id,score\n1,2\n3\n", "short.csv: line 3: 1 fields, the header has 2"),
    ("quote.csv", 'id,score\n1,"2\n', "quote.csv: line 2: unreadable CSV"),
    ("empty.csv", "", "empty.csv: empty file"),
    ("twice.csv", "id,id\n1,2\n", "column 'id' appears twice"),
])
def test_unreadable_tables_name_the_line(tmp_path: Path, name: str, text: str,
                                         message: str) -> None:
    with pytest.raises(TableError, match=message.replace("(", r"\(")):
        read_table(_write(tmp_path / name, text))


# ---------------------------------------------------------------- the command

HUMAN = """model,case_id,domain,C5,valid_sheet,label
m1,a,Kitchen,7,yes,identity_drift
m1,b,Kitchen,3,no,none
m1,c,Gardening,9,yes,none
m1,d,Gardening,,no,scene_drift
m2,a,Kitchen,5,yes,none
m2,x,Kitchen,4,yes,none
"""
JUDGE = "\n".join(json.dumps(r) for r in [
    {"model": "m1", "case_id": "a", "C5": 8, "valid_sheet": True, "gate": 8.5,
     "label": "identity_drift"},
    {"model": "m1", "case_id": "b", "C5": 2, "valid_sheet": False, "gate": 2.0,
     "label": "scene_drift"},
    {"model": "m1", "case_id": "c", "C5": 9, "valid_sheet": False, "gate": 4.0,
     "label": "none"},
    {"model": "m1", "case_id": "d", "C5": 5, "valid_sheet": True, "gate": 9.0,
     "label": "scene_drift"},
    {"model": "m2", "case_id": "a", "C5": 6, "valid_sheet": True, "gate": 7.5,
     "label": "none"},
    {"model": "m3", "case_id": "a", "C5": 6, "valid_sheet": True, "gate": 7.5,
     "label": "none"},
]) + "\n"


@pytest.fixture
def tables(tmp_path: Path) -> tuple[str, str]:
    return (str(_write(tmp_path / "human.csv", HUMAN)),
            str(_write(tmp_path / "judge.jsonl", JUDGE)))


def _agree(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["agree", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_ordinal_scores_per_group_and_overall(tables: tuple[str, str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _agree(capsys, *tables, "--on", "model,case_id", "--label", "C5",
                            "--by", "domain", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["type"] == "ordinal" and result["by"] == "domain"
    x, y = [7, 3, 9, 5], [8, 2, 9, 6]
    overall = result["overall"]
    assert overall["n"] == 4 and overall["missing"] == 1
    assert overall["weighted_kappa"] == pytest.approx(weighted_kappa(x, y))
    assert overall["spearman"] == pytest.approx(scipy.stats.spearmanr(x, y).statistic)
    assert overall["kendall"] == pytest.approx(scipy.stats.kendalltau(x, y).statistic)
    assert overall["mae"] == pytest.approx(0.75)
    assert set(overall) == {"n", "missing", "weighted_kappa", "spearman", "kendall", "mae"}
    garden = result["groups"]["Gardening"]
    assert garden["n"] == 1 and garden["missing"] == 1
    assert garden["spearman"] is None and garden["weighted_kappa"] is None  # n < 2: null
    assert result["groups"]["Kitchen"]["n"] == 3
    assert result["unmatched_a"] == {"count": 1, "first": [{"model": "m2", "case_id": "x"}]}
    assert result["unmatched_b"] == {"count": 1, "first": [{"model": "m3", "case_id": "a"}]}
    assert "1 row of" in err and "model=m2, case_id=x" in err

    code, out, _ = _agree(capsys, *tables, "--on", "model, case_id", "--label", "C5",
                          "--by", "domain")
    assert code == 0
    lines = out.splitlines()
    assert "labels: ordinal" in lines[1]
    header = next(line for line in lines if line.startswith("domain"))
    assert header.split() == ["domain", "n", "missing", "weighted_kappa", "spearman",
                              "kendall", "mae"]
    assert next(line for line in lines if line.startswith("Gardening")).split()[3:] == \
        ["n/a", "n/a", "n/a", "0.000"]
    assert next(line for line in lines if line.startswith("overall")).split()[1:3] == \
        ["4", "1"]


def test_categorical_labels_with_a_as_the_reference(tables: tuple[str, str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _agree(capsys, *tables, "--on", "model,case_id", "--label", "label",
                            "--json")
    assert code == 0, err
    overall = json.loads(out)["overall"]
    a = ["identity_drift", "none", "none", "scene_drift", "none"]
    b = ["identity_drift", "scene_drift", "none", "scene_drift", "none"]
    assert overall["accuracy"] == pytest.approx(80.0)
    assert overall["kappa"] == pytest.approx(cohen_kappa(a, b))
    assert (overall["macro_precision"], overall["macro_recall"], overall["macro_f1"]) == \
        pytest.approx(macro_prf(a, b))
    assert "groups" not in json.loads(out)

    code, out, _ = _agree(capsys, *tables, "--on", "model,case_id", "--label", "valid_sheet",
                          "--json")
    assert json.loads(out)["type"] == "categorical"  # yes/no against true/false
    assert json.loads(out)["overall"]["accuracy"] == pytest.approx(60.0)


def test_continuous_against_binary_is_point_biserial(tables: tuple[str, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _agree(capsys, *tables, "--on", "model,case_id", "--label", "valid_sheet",
                            "--label-b", "gate", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["type"] == "continuous" and result["binary"] == "a"
    gate, valid = [8.5, 2.0, 4.0, 9.0, 7.5], [True, False, True, False, True]
    assert result["overall"]["point_biserial"] == pytest.approx(
        scipy.stats.pointbiserialr(valid, gate).statistic)
    code, out, _ = _agree(capsys, *tables, "--on", "model,case_id", "--label", "valid_sheet",
                          "--label-b", "gate")
    assert "continuous (B) vs binary (A): point-biserial r" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--label", "C6"], "human.csv: no column 'C6' (columns: model, case_id, domain, C5,"),
    (["--label", "C5", "--label-b", "C9"], "judge.jsonl: no column 'C9' (columns: model,"),
    (["--label", "C5", "--by", "team"], "no column 'team' for --by"),
    (["--label", "C5", "--type", "ordinal", "--label-b", "label"], "is not an integer"),
])
def test_bad_arguments_exit_2_with_one_line(tables: tuple[str, str], argv: list[str],
                                            message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _agree(capsys, *tables, "--on", "model,case_id", *argv)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_bad_files_exit_2(tmp_path: Path, tables: tuple[str, str],
                          capsys: pytest.CaptureFixture[str]) -> None:
    human, judge = tables
    code, _, err = _agree(capsys, str(tmp_path / "nope.csv"), judge, "--on", "model",
                          "--label", "C5")
    assert code == 2 and "nope.csv: no such file" in err
    twice = _write(tmp_path / "twice.csv", HUMAN + "m1,b,Kitchen,4,no,none\n")
    code, _, err = _agree(capsys, str(twice), judge, "--on", "model,case_id", "--label", "C5")
    assert code == 2
    assert "twice.csv: duplicate key model=m1, case_id=b (lines 3 and 8)" in err
    code, _, err = _agree(capsys, human, judge, "--on", "domain", "--label", "C5")
    assert code == 2 and "judge.jsonl: no column 'domain'" in err
    other = _write(tmp_path / "other.csv", "model,case_id,C5\nz,z,3\n")
    code, _, err = _agree(capsys, human, str(other), "--on", "model,case_id", "--label", "C5")
    assert code == 2 and "no row of" in err
