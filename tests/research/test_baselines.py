"""The baseline metrics (CLIPScore, caption similarity) on tiny random models, the prefix
stripping on TempViz prompts, and ``imagetime baseline`` feeding ``imagetime agree``."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.cli import main
from pytest_imagetime.research.baselines.caption_similarity import (
    CaptionSimilarityScorer,
    SentenceEmbedder,
)
from pytest_imagetime.research.baselines.clipscore import CLIPSCORE_WEIGHT, ClipScorer
from pytest_imagetime.research.baselines.loading import BaselineError
from pytest_imagetime.research.baselines.prompts import strip_imperative, strip_order
from tests.builders import PROMPT, case_dict, write_case_file
from tests.tiny_text_models import save_bert, save_blip, save_clip

pytest.importorskip("transformers")

TEMPVIZ = Path(__file__).resolve().parents[3] / "shared" / "tempviz"
CASE_IDS = [f"kitchen-pour-water-{n}" for n in (1, 2)] + [f"kitchen-stir-tea-{n}"
                                                           for n in (1, 2)]


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("baseline-models")
    return {"clip": str(save_clip(root / "clip")), "blip": str(save_blip(root / "blip")),
            "bert": str(save_bert(root / "bert"))}


@pytest.fixture(scope="session")
def clip(models: dict[str, str]) -> ClipScorer:
    return ClipScorer(models["clip"], device="cpu", batch_size=3)


@pytest.fixture(scope="session")
def captions(models: dict[str, str]) -> CaptionSimilarityScorer:
    return CaptionSimilarityScorer(models["blip"], models["bert"], device="cpu", batch_size=3)


def _opening(prompt: str, words: str) -> str:
    """The prompt with other first words: the tiny embedder reads only its opening."""
    return prompt.replace("One square image", words, 1)


def _cases() -> list[dict[str, Any]]:
    return [
        case_dict(CASE_IDS[0]),
        case_dict(CASE_IDS[1], variant=2, setup={"scene": "a marble counter",
                                                  "style": "flat illustration",
                                                  "camera": "top-down view"},
                  prompt=_opening(PROMPT, "One square picture")),
        case_dict(CASE_IDS[2], concept="stir tea", prompt=_opening(PROMPT, "One square sheet")),
        case_dict(CASE_IDS[3], concept="stir tea", variant=2,
                  prompt=_opening(PROMPT, "One square frame")),
    ]


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A procedural run of four cases scored by the pixel judge: (case file, output dir)."""
    root = tmp_path_factory.mktemp("baseline-run")
    cases = write_case_file(root / "kitchen.yaml", _cases())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--imagetime-model=procedural",
         "--imagetime-judge=pixel", "--imagetime-size=64", f"--imagetime-out={root / 'out'}",
         "-p", "no:cacheprovider", "-q", str(cases)],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: a case failed its gate
    return cases, root / "out"


def _images(count: int) -> list[Image.Image]:
    colours = [(200, 30, 30), (20, 160, 40), (30, 40, 220), (240, 240, 240), (0, 0, 0)]
    out = []
    for n in range(count):
        image = Image.new("RGB", (48 + 8 * n, 48), colours[n % len(colours)])
        image.paste((255 - 40 * n, 90, 40 * n), (4, 4, 20, 30))
        out.append(image)
    return out


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


# ---------------------------------------------------------------- the imperative prefix


@pytest.mark.parametrize(("prompt", "text"), [
    ("Create a photorealistic image of an Aardvark that is one month old.",
     "an Aardvark that is one month old."),
    ("Give me a photorealistic image of the Gare de la Bastille in France on 05/17/1950",
     "the Gare de la Bastille in France on 05/17/1950"),
    ("Generate a photorealistic image of a forest in europe in january ",
     "a forest in europe in january"),
    ("Produce a work of art that exemplifies a style popular in Western cultures, during "
     "1250 BC.", "a work of art that exemplifies a style popular in Western cultures, during "
     "1250 BC."),
    ("Give me an artwork in the style of Ancient Art.", "an artwork in the style of Ancient Art."),
    ("Create a realistic map of europe in 1914", "a realistic map of europe in 1914"),
    ("Please draw a picture showing two cats", "two cats"),
    ("Can you show me an old photograph of a harbour?", "a harbour?"),
])
def test_strip_imperative_on_tempviz_style_prompts(prompt: str, text: str) -> None:
    assert strip_imperative(prompt) == text


@pytest.mark.parametrize("prompt", [PROMPT, "A photo of a cat", "Created in 1900, a barn",
                                    "Create", "Create an image of "])
def test_strip_imperative_keeps_what_it_cannot_strip(prompt: str) -> None:
    assert strip_imperative(prompt) == prompt.strip()


@pytest.mark.skipif(not TEMPVIZ.is_dir(), reason="no TempViz tables beside the checkout")
def test_strip_imperative_removes_the_imperative_of_every_tempviz_prompt() -> None:
    checked = 0
    for table in sorted(TEMPVIZ.glob("*.csv")):
        with table.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                prompt, order = row["prompt"], row.get("imperative") or row["Imperative"]
                text = strip_imperative(prompt)
                assert prompt.startswith(order) and text
                assert prompt.strip().endswith(text) and not text.startswith(order)
                assert " image of " not in text[:30], prompt
                checked += 1
    assert checked > 1000


# ---------------------------------------------------------------- CLIPScore


def test_clipscore_is_bounded_finite_and_deterministic(clip: ClipScorer,
                                                       models: dict[str, str]) -> None:
    texts = ["a red square", "a green square", PROMPT, "a white square", "a black square"]
    first = clip.score(_images(5), texts)
    assert all(math.isfinite(r.score) and 0.0 <= r.score <= CLIPSCORE_WEIGHT for r in first)
    assert all(-1.0 <= r.cosine <= 1.0 for r in first)
    assert [r.score for r in first] == [CLIPSCORE_WEIGHT * max(r.cosine, 0.0) for r in first]
    assert clip.score(_images(5), texts) == first
    assert clip.score_one(_images(1)[0], texts[0]) == clip.score_one(_images(1)[0], texts[0])
    reloaded = ClipScorer(models["clip"], device="cpu", batch_size=5).score(_images(5), texts)
    assert [r.cosine for r in reloaded] == pytest.approx([r.cosine for r in first], abs=1e-6)
    assert not clip.model.training


def test_clipscore_batch_equals_one_by_one(models: dict[str, str]) -> None:
    texts = ["a cat", "the dog of the house", "an image", "glass of water"]
    batched = ClipScorer(models["clip"], device="cpu", batch_size=4).score(_images(4), texts)
    single = ClipScorer(models["clip"], device="cpu", batch_size=1)
    one_by_one = [single.score_one(i, t) for i, t in zip(_images(4), texts, strict=True)]
    assert [r.cosine for r in batched] == pytest.approx([r.cosine for r in one_by_one],
                                                        abs=1e-5)


def test_clipscore_reads_only_the_first_77_tokens(clip: ClipScorer) -> None:
    assert clip.max_tokens == 77
    assert clip.is_truncated(PROMPT) and not clip.is_truncated("a cat")
    image = _images(1)[0]
    tail = " Then a dog walks in and knocks the glass over."
    long = clip.score_one(image, PROMPT + tail)
    assert long.cosine == pytest.approx(clip.score_one(image, PROMPT).cosine, abs=1e-6)


def test_scorer_rejects_unequal_lengths(clip: ClipScorer) -> None:
    with pytest.raises(ValueError, match="2 images but 1 texts"):
        clip.score(_images(2), ["a cat"])


# ---------------------------------------------------------------- caption similarity


def test_caption_similarity_is_bounded_and_deterministic(
        captions: CaptionSimilarityScorer, models: dict[str, str]) -> None:
    prompts = ["Create a photorealistic image of an Aardvark that is one month old.",
               "Give me a realistic map of asia in 1800", PROMPT, "a cat"]
    first = captions.score(_images(4), prompts)
    assert all(math.isfinite(r.score) and -1.0 <= r.score <= 1.0 for r in first)
    assert [r.text for r in first] == [strip_imperative(p) for p in prompts]
    assert all(isinstance(r.caption, str) for r in first)
    assert captions.score(_images(4), prompts) == first
    fresh = CaptionSimilarityScorer(models["blip"], models["bert"], device="cpu", batch_size=1)
    one_by_one = [fresh.score_one(i, p) for i, p in zip(_images(4), prompts, strict=True)]
    assert [r.caption for r in one_by_one] == [r.caption for r in first]
    assert [r.score for r in one_by_one] == pytest.approx([r.score for r in first], abs=1e-5)


def test_identical_texts_have_similarity_one(models: dict[str, str]) -> None:
    embedder = SentenceEmbedder(models["bert"], device="cpu")
    assert embedder.similarity("an aardvark that is one month old",
                               "an aardvark that is one month old") == pytest.approx(1.0)
    rows = embedder.embed(["a cat", "a dog", "a cat"])
    assert rows.shape[0] == 3 and float(rows.norm(dim=-1).min()) == pytest.approx(1.0)
    # padding next to a longer text changes nothing: the mean is over real tokens only
    fresh = SentenceEmbedder(models["bert"], device="cpu")
    alone = fresh.embed(["a cat"])[0]
    padded = SentenceEmbedder(models["bert"], device="cpu").embed(
        ["a cat", "a very much longer text about a dog"])[0]
    assert padded.tolist() == pytest.approx(alone.tolist(), abs=1e-5)


def test_caption_equal_to_the_stripped_prompt_scores_one(
        captions: CaptionSimilarityScorer, monkeypatch: pytest.MonkeyPatch) -> None:
    prompt = "Create a photorealistic image of an Aardvark that is one month old."
    monkeypatch.setattr(captions.captioner, "captions",
                        lambda images: ["an Aardvark that is one month old."] * len(images))
    assert captions.score_one(_images(1)[0], prompt).score == pytest.approx(1.0)


# ---------------------------------------------------------------- the command


def _labels(path: Path, model: str) -> Path:
    """Hand-made yes/no labels of the run's four images."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["model", "case_id", "q3"])
        writer.writerows([model, c, a] for c, a in zip(CASE_IDS, ["yes", "no", "yes", "no"],
                                                       strict=True))
    return path


def test_clipscore_table_feeds_agree_point_biserial(
        run: tuple[Path, Path], models: dict[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cases, out = run
    table = tmp_path / "clipscore.csv"
    assert main(["baseline", "clipscore", str(out / "procedural"), "--model", models["clip"],
                 "--cases", str(cases), "--device", "cpu", "-o", str(table)]) == 0
    assert f"wrote {table}: 4 images" in capsys.readouterr().out
    rows = _table(table)
    assert list(rows[0]) == ["model", "case_id", "score", "cosine"]
    assert sorted(r["case_id"] for r in rows) == sorted(CASE_IDS)
    assert {r["model"] for r in rows} == {"procedural"}
    assert all(0.0 <= float(r["score"]) <= CLIPSCORE_WEIGHT for r in rows)
    labels = _labels(tmp_path / "labels.csv", "procedural")
    # The cosine, not the clipped score: random weights may put every score at 0.
    assert main(["agree", str(table), str(labels), "--on", "model,case_id", "--label",
                 "cosine", "--label-b", "q3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["binary"] == "b" and result["overall"]["n"] == 4
    assert -1.0 <= result["overall"]["point_biserial"] <= 1.0
    assert main(["agree", str(table), str(labels), "--on", "model,case_id", "--label", "score",
                 "--label-b", "q3"]) == 0
    assert "point-biserial r" in capsys.readouterr().out


def test_caption_table_over_a_run_directory(
        run: tuple[Path, Path], models: dict[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cases, out = run
    assert main(["baseline", "caption", str(out / "procedural" / "pixel"), "--captioner",
                 models["blip"], "--embedder", models["bert"], "--cases", str(cases),
                 "--batch-size", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metric"] == "caption" and result["n"] == 4
    assert result["models"] == ["procedural"]
    assert all(-1.0 <= float(r["score"]) <= 1.0 and "caption" in r for r in result["rows"])
    assert {r["text"] for r in result["rows"]} >= {PROMPT}  # no imperative to strip
    table = tmp_path / "caption.csv"
    assert main(["baseline", "caption", str(out), "--captioner", models["blip"],
                 "--embedder", models["bert"], "--cases", str(cases), "-o", str(table)]) == 0
    rows = _table(table)
    assert list(rows[0]) == ["model", "case_id", "score", "caption", "text"]
    labels = _labels(tmp_path / "labels.csv", "procedural")
    capsys.readouterr()
    assert main(["agree", str(table), str(labels), "--on", "model,case_id", "--label", "score",
                 "--label-b", "q3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["point_biserial"] is not None


def _tempviz_run(root: Path) -> Path:
    """Images stored like TempViz runs: the prompt in each generation record."""
    folder = root / "tiny-model" / "images"
    folder.mkdir(parents=True)
    prompts = {"animals-0": "Create a photorealistic image of an Aardvark that is one month old.",
               "maps-0": "Give me a realistic map of asia in 1800"}
    for (case_id, prompt), image in zip(prompts.items(), _images(2), strict=True):
        image.save(folder / f"{case_id}.png")
        (folder / f"{case_id}.json").write_text(json.dumps(
            {"model": "tiny-model", "setting": "prompt-only", "case_id": case_id,
             "prompt": prompt}))
    return root / "tiny-model"


def test_tempviz_prompts_come_from_the_generation_records(
        models: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_dir = _tempviz_run(tmp_path)
    missing_cases = tmp_path / "no-cases"  # never read: every record holds its prompt
    assert main(["baseline", "caption", str(model_dir), "--captioner", models["blip"],
                 "--embedder", models["bert"], "--cases", str(missing_cases),
                 "--strip", "imperative-and-medium", "--json"]) == 0
    rows = {r["case_id"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["animals-0"]["text"] == "an Aardvark that is one month old."
    assert rows["maps-0"]["text"] == "a realistic map of asia in 1800"
    assert {r["model"] for r in rows.values()} == {"tiny-model"}


def test_the_paper_setting_strips_the_imperative_only_by_default(
        models: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_dir = _tempviz_run(tmp_path)
    assert main(["baseline", "caption", str(model_dir), "--captioner", models["blip"],
                 "--embedder", models["bert"], "--json"]) == 0
    rows = {r["case_id"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["animals-0"]["text"] == ("a photorealistic image of an Aardvark that is one "
                                         "month old.")
    assert rows["maps-0"]["text"] == "a realistic map of asia in 1800"
    assert main(["baseline", "caption", str(model_dir), "--captioner", models["blip"],
                 "--embedder", models["bert"], "--strip", "none", "--json"]) == 0
    rows = {r["case_id"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["maps-0"]["text"] == "Give me a realistic map of asia in 1800"


def test_clipscore_compares_the_stripped_prompt(
        models: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_dir = _tempviz_run(tmp_path)
    scorer = ClipScorer(models["clip"], device="cpu")
    image = Image.open(model_dir / "images" / "maps-0.png")
    assert main(["baseline", "clipscore", str(model_dir), "--model", models["clip"],
                 "--json"]) == 0
    rows = {r["case_id"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    stripped = scorer.score_one(image, "a realistic map of asia in 1800").cosine
    whole = scorer.score_one(image, "Give me a realistic map of asia in 1800").cosine
    assert float(rows["maps-0"]["cosine"]) == pytest.approx(stripped, abs=1e-5)
    assert stripped != pytest.approx(whole, abs=1e-5)


def test_the_defaults_are_the_papers_models() -> None:
    from pytest_imagetime.research.baselines.defaults import (
        DEFAULT_CAPTIONER,
        DEFAULT_CLIP,
        DEFAULT_EMBEDDER,
    )

    assert DEFAULT_CLIP == "laion/CLIP-ViT-bigG-14-laion2B-39B-b160k"
    assert DEFAULT_CAPTIONER == "Salesforce/blip-image-captioning-base"
    assert DEFAULT_EMBEDDER == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.skipif(not TEMPVIZ.is_dir(), reason="no TempViz tables beside the checkout")
def test_strip_order_removes_exactly_the_template_verb_of_every_tempviz_prompt() -> None:
    checked = 0
    for table in sorted(TEMPVIZ.glob("*.csv")):
        with table.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                prompt, order = row["prompt"], row.get("imperative") or row["Imperative"]
                assert strip_order(prompt) == prompt[len(order):].strip(), prompt
                checked += 1
    assert checked > 1000


def test_prompts_table_fills_in_missing_records(
        models: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_dir = _tempviz_run(tmp_path)
    (model_dir / "images" / "maps-0.json").unlink()
    prompts = tmp_path / "prompts.csv"
    prompts.write_text("case_id,prompt\nmaps-0,Create a realistic map of europe in 1914\n")
    assert main(["baseline", "clipscore", str(model_dir), "--model", models["clip"],
                 "--prompts", str(prompts), "--json"]) == 0
    rows = {r["case_id"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert set(rows) == {"animals-0", "maps-0"}
    assert rows["maps-0"]["model"] == "tiny-model"  # no record: the folder names the model


def test_images_without_a_prompt_are_named(models: dict[str, str], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    model_dir = _tempviz_run(tmp_path)
    (model_dir / "images" / "maps-0.json").unlink()
    cases = write_case_file(tmp_path / "kitchen.yaml", [case_dict()])
    assert main(["baseline", "clipscore", str(model_dir), "--model", models["clip"],
                 "--cases", str(cases)]) == 0
    captured = capsys.readouterr()
    assert "1 image left out: no prompt" in captured.err and "tiny-model/maps-0" in captured.err
    assert captured.out.splitlines()[0] == "model,case_id,score,cosine"
    assert len(captured.out.splitlines()) == 2


def test_images_of_an_edited_case_are_left_out(
        run: tuple[Path, Path], models: dict[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run
    edited = _cases()
    edited[0]["prompt"] = _opening(PROMPT, "One square photograph")
    cases = write_case_file(tmp_path / "kitchen.yaml", edited)
    assert main(["baseline", "clipscore", str(out), "--model", models["clip"],
                 "--cases", str(cases), "--json"]) == 0
    captured = capsys.readouterr()
    assert "1 image left out: the case prompt changed" in captured.err
    assert f"procedural/{CASE_IDS[0]}" in captured.err
    assert json.loads(captured.out)["n"] == 3


# ---------------------------------------------------------------- errors


def test_bad_model_path_exits_2_naming_it(run: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cases, out = run
    missing = tmp_path / "no-such-clip"
    assert main(["baseline", "clipscore", str(out), "--model", str(missing),
                 "--cases", str(cases)]) == 2
    assert f"{missing}: no such folder" in capsys.readouterr().err
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    assert main(["baseline", "clipscore", str(out), "--model", str(empty),
                 "--cases", str(cases)]) == 2
    err = capsys.readouterr().err
    assert f"cannot load the CLIP processor from {empty}" in err and "save_pretrained" in err


def test_bad_embedder_names_it(run: tuple[Path, Path], models: dict[str, str],
                               capsys: pytest.CaptureFixture[str]) -> None:
    cases, out = run
    assert main(["baseline", "caption", str(out), "--captioner", models["blip"],
                 "--embedder", models["clip"] + "-gone", "--cases", str(cases)]) == 2
    assert "sentence embedder" in capsys.readouterr().err


def test_no_images_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "model" / "images").mkdir(parents=True)
    assert main(["baseline", "clipscore", str(tmp_path / "model")]) == 2
    assert "no images" in capsys.readouterr().err
    assert main(["baseline", "clipscore", str(tmp_path / "nowhere")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["baseline", "clipscore", str(tmp_path)]) == 2  # model/images but empty
    assert "no images" in capsys.readouterr().err


def test_missing_libraries_name_the_install(monkeypatch: pytest.MonkeyPatch,
                                            models: dict[str, str]) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(BaselineError, match=r"pip install 'pytest-imagetime\[diffusers\]'"):
        ClipScorer(models["clip"])


def test_unknown_device_is_refused(models: dict[str, str]) -> None:
    with pytest.raises(BaselineError, match="use cpu, cuda"):
        ClipScorer(models["clip"], device="tpu")
