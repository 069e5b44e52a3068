"""Invalid judge answers (re-asks) against a local judge that makes realistic mistakes.

A local Chat Completions server on 127.0.0.1 plays a judge that, per answer, misspells a
predicate id (``P2``, ``pred_2``, ``p9``), gives a number where the case says null, or
leaves out a confidence, each at a set rate. When the request asks for strict structured
outputs, the server emulates constrained decoding as OpenAI's does: where the model's token
is not allowed by the schema, the allowed one it meant is written instead (the id it meant,
null, a confidence). Every packaged case is judged once, with the real openai client and the
vlm judge's own re-asking; the script prints how many answers were invalid (re-asked), how
many cases failed after the re-asks, and how many accepted judgments lack a confidence.

    PYTHONPATH=src python benchmarks/judge_answers.py
    PYTHONPATH=/path/to/older/checkout/src python benchmarks/judge_answers.py   # before
    PYTHONPATH=src python benchmarks/judge_answers.py --response-format json_object
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_openai import ServerState, _spec, _user_text, chat_server

from pytest_imagetime.cases.loading import builtin_cases_dir, case_files, load_case_file
from pytest_imagetime.judges.base import JudgeOptions, SheetToJudge
from pytest_imagetime.judges.vlm import VlmJudge
from pytest_imagetime.rubric.judgment import JudgeError

MISTAKES = ("wrong_id", "number_for_null", "missing_confidence")


class MistakenJudge:
    """The responder: a correct answer for the request's schema and case, with mistakes."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.seed = seed
        self.attempts: Counter[str] = Counter()
        self.made: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        text = _user_text(request)
        spec = _spec(request)
        key = hashlib.sha256(text.encode()).hexdigest()
        with self.lock:
            self.attempts[key] += 1
            attempt = self.attempts[key]
        rng = random.Random(f"{self.seed}:{key}:{attempt}")
        fmt = request.get("response_format", {})
        schema = (fmt.get("json_schema", {}).get("schema") if fmt.get("type") == "json_schema"
                  else json.loads(text.split("matching this JSON Schema:\n", 1)[1]))
        nulls = {d for d in spec["nulls"] if d}
        intended = _fill(schema, (), spec, nulls)
        answer = copy.deepcopy(intended)
        for mistake in MISTAKES:
            if rng.random() < self.rate and _make(mistake, answer, nulls, rng):
                with self.lock:
                    self.made[mistake] += 1
        if fmt.get("type") == "json_schema" and fmt["json_schema"].get("strict"):
            answer = _constrained(answer, intended, schema)
        return json.dumps(answer)


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type", [])
    return [t] if isinstance(t, str) else list(t)


def _fill(schema: dict[str, Any], path: tuple[str, ...], spec: dict[str, Any],
          nulls: set[str]) -> Any:
    """A correct answer, built from the schema's shape and the case's content."""
    name = path[-1] if path else ""
    if "object" in _types(schema):
        return {k: _fill(sub, (*path, k), spec, nulls)
                for k, sub in schema["properties"].items()}
    if "array" in _types(schema):
        if name == "predicates":
            return [{"id": p["id"], "evidence": "seen", "verdict": "holds"}
                    for p in spec["predicates"]]
        if name == "forbidden":
            return [{"id": f["id"], "evidence": "not seen", "verdict": "absent"}
                    for f in spec["forbidden_states"]]
        if name == "panels":
            return [{"panel": i, "stage": f"t{i}", "observed": "as asked", "readable": True}
                    for i in range(1, 5)]
        return []
    dim = path[-2] if name in ("score", "confidence") else name
    if dim in spec.get("all_dims", ()) or (dim[:1] in "CD" and dim[1:].isdigit()):
        if dim in nulls:
            return None
        return 0.8 if name == "confidence" else 7
    if "enum" in schema:
        return schema["enum"][0]
    types = [t for t in _types(schema) if t != "null"]
    kind = types[0] if types else "null"
    return {"string": "as asked", "boolean": True, "integer": 4, "number": 0.5,
            "null": None}[kind]


def _make(mistake: str, answer: dict[str, Any], nulls: set[str], rng: random.Random) -> bool:
    if mistake == "wrong_id" and answer["predicates"]:
        verdict = rng.choice(answer["predicates"])
        number = verdict["id"][1:]
        verdict["id"] = rng.choice([f"P{number}", f"pred_{number}", f"p{int(number) + 10}"])
        return True
    if mistake == "number_for_null" and nulls:
        dim = rng.choice(sorted(nulls))
        if dim.startswith("C"):
            answer["capability"][dim] = {"score": 5, "confidence": 0.5}
        else:
            answer["diagnostic"][dim] = 5
        return True
    if mistake == "missing_confidence":
        scored = [d for d, v in answer["capability"].items() if v["score"] is not None]
        answer["capability"][rng.choice(scored)]["confidence"] = None
        return True
    return False


def _constrained(value: Any, intended: Any, schema: dict[str, Any]) -> Any:
    """What constrained decoding lets through: a token the schema refuses becomes the allowed
    one the model meant."""
    if isinstance(value, dict) and "properties" in schema:
        return {k: _constrained(value.get(k), intended.get(k), schema["properties"][k])
                for k in schema["properties"]}
    if isinstance(value, list) and "items" in schema:
        return [_constrained(v, i, schema["items"]) for v, i in zip(value, intended, strict=True)]
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return intended
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=0.1,
                        help="chance of each kind of mistake per answer (default 0.1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retries", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="judge only the first N cases")
    parser.add_argument("--response-format", choices=("json_schema", "json_object"),
                        default="json_schema",
                        help="json_object: a server without structured outputs (no "
                             "constrained decoding); the schema travels in the prompt")
    args = parser.parse_args()
    cases = [c for f in case_files([builtin_cases_dir()]) for c in load_case_file(f)]
    if args.limit:
        cases = cases[:args.limit]
    image = Image.new("RGB", (64, 64), "white")
    responder = MistakenJudge(args.rate, args.seed)
    failed = missing_confidence = 0
    with chat_server(ServerState(responder=responder)) as server:
        judge = VlmJudge(None, options=JudgeOptions(base_url=server.base_url, key_env=None,
                                                    retries=args.retries, timeout_s=30.0,
                                                    response_format=args.response_format))
        for case in cases:
            sheet = SheetToJudge(case, "prompt-only", image, Path("none.png"), "0" * 64)
            try:
                judgment = judge.judge(sheet=sheet)
            except JudgeError:
                failed += 1
                continue
            missing_confidence += any(
                judgment.scores.get(d) is not None and judgment.confidence.get(d) is None
                for d in judgment.confidence)
        requests = len(server.state.requests)
    print(f"cases judged:                      {len(cases)}")
    print(f"mistakes the judge made:           {dict(sorted(responder.made.items()))}")
    print(f"answers asked for:                 {requests}")
    print(f"invalid answers (re-asked or failed): {requests - (len(cases) - failed)}")
    print(f"cases failed after {args.retries} re-asks:     {failed}")
    print(f"accepted without a confidence:     {missing_confidence}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
