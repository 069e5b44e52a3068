"""The hosted backends' keys and credentials, checked at start-up: every model spec's problem
in one usage error, each naming what to set, and the key option suggested only where it helps
(a run of one hosted backend)."""

from __future__ import annotations

import pytest

from tests.builders import case_dict, write_case_file

KEY_VARIABLES = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ARK_API_KEY",
                 "BFL_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
                 "OPENAI_BASE_URL")
HOSTED = ("--imagetime-model=openai-images", "--imagetime-model=gemini-image",
          "--imagetime-model=seedream", "--imagetime-model=bfl")


@pytest.fixture(autouse=True)
def no_keys(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    write_case_file(pytester.path / "k.yaml", [case_dict()])


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest_subprocess("k.yaml", "--imagetime-judge=pixel", *args)
    assert "Traceback" not in result.stderr.str()
    return result


def _refused(result: pytest.RunResult) -> list[str]:
    """The lines of the usage error; no item ran."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    assert "passed" not in result.stdout.str() and "error" not in result.stdout.str()
    return [line for line in result.stderr.str().splitlines() if line.startswith("ERROR: ")]


def test_one_run_names_every_missing_key(pytester: pytest.Pytester) -> None:
    result = _run(pytester, *HOSTED)
    lines = _refused(result)
    assert len(lines) == 4, lines
    for line, (spec, variable) in zip(lines, [
            ("openai-images", "OPENAI_API_KEY"), ("gemini-image", "GEMINI_API_KEY or "
                                                                  "GOOGLE_API_KEY"),
            ("seedream", "ARK_API_KEY"), ("bfl", "BFL_API_KEY")], strict=True):
        assert line.startswith(f"ERROR: --imagetime-model={spec}: the {spec} model needs an "
                               f"API key in the environment variable {variable} (export it: "
                               f"each hosted backend of this run reads its own variable)"), line
    # It would name one variable for all four.
    assert "--imagetime-model-key-env" not in result.stderr.str()


def test_a_backend_whose_key_is_set_is_still_one_of_several(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARK_API_KEY", "ark-key")
    lines = _refused(_run(pytester, "--imagetime-model=seedream", "--imagetime-model=bfl"))
    assert lines == ["ERROR: --imagetime-model=bfl: the bfl model needs an API key in the "
                     "environment variable BFL_API_KEY (export it: each hosted backend of this "
                     "run reads its own variable)"]


def test_a_single_hosted_backend_is_told_of_the_key_option(pytester: pytest.Pytester) -> None:
    lines = _refused(_run(pytester, "--imagetime-model=seedream"))
    assert lines == ["ERROR: --imagetime-model=seedream: the seedream model needs an API key "
                     "in the environment variable ARK_API_KEY (or --imagetime-model-key-env="
                     "NAME for another variable, 'none' for a server without keys)"]


def test_two_specs_of_one_backend_share_its_variable(pytester: pytest.Pytester) -> None:
    lines = _refused(_run(pytester, "--imagetime-model=bfl", "--imagetime-model=bfl:flux-2-max"))
    assert len(lines) == 2 and all("--imagetime-model-key-env=NAME" in line for line in lines)
    assert lines[1].startswith("ERROR: --imagetime-model=bfl:flux-2-max: the bfl model needs")


def test_a_key_option_given_to_several_backends_is_named_as_the_mistake(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_KEY", raising=False)
    lines = _refused(_run(pytester, "--imagetime-model=seedream", "--imagetime-model=bfl",
                          "--imagetime-model-key-env=MY_KEY"))
    assert len(lines) == 2
    for line in lines:
        assert line.endswith("needs an API key in the environment variable MY_KEY "
                             "(--imagetime-model-key-env names that one variable for every "
                             "hosted backend of this run: leave it out and export each "
                             "backend's own key variable)"), line


def test_every_kind_of_problem_joins_the_list(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "k.yaml", "--imagetime-judge=vlm", "--imagetime-model=no-such-model",
        "--imagetime-model=bfl:api_size=100", "--imagetime-model=seedream")
    lines = _refused(result)
    assert [line.split(": ")[1] for line in lines] == [
        "--imagetime-judge=vlm", "--imagetime-model=no-such-model",
        "--imagetime-model=bfl:api_size=100", "--imagetime-model=seedream"]
    assert "OPENAI_API_KEY" in lines[0] and "unknown model 'no-such-model'" in lines[1]
    assert "multiple of 16" in lines[2] and "ARK_API_KEY" in lines[3]


@pytest.mark.parametrize("no_calls", ["--collect-only", "--imagetime-dry-run"])
def test_a_session_that_makes_no_calls_needs_no_key(pytester: pytest.Pytester,
                                                    no_calls: str) -> None:
    result = _run(pytester, *HOSTED, no_calls)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


@pytest.fixture
def no_google_credentials(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    """No application default credentials anywhere google.auth looks: a missing key file, an
    empty gcloud configuration, a metadata server that is not there."""
    missing = pytester.path / "no-such-adc.json"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(missing))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(pytester.mkdir("gcloud")))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    return str(missing)


def test_vertex_ai_without_credentials_is_refused_at_start_up(
        pytester: pytest.Pytester, no_google_credentials: str) -> None:
    lines = _refused(_run(pytester, "--imagetime-model=gemini-image:vertex=true,project=p"))
    assert len(lines) == 1
    assert lines[0].startswith("ERROR: --imagetime-model=gemini-image:vertex=true,project=p: "
                               "the gemini-image model on Vertex AI needs Google application "
                               "default credentials, and none were found (")
    assert no_google_credentials in lines[0]
    assert lines[0].endswith("run 'gcloud auth application-default login', or set "
                             "GOOGLE_APPLICATION_CREDENTIALS to a service account's key file")


@pytest.mark.parametrize("no_calls", ["--collect-only", "--imagetime-dry-run"])
def test_vertex_ai_without_credentials_may_still_collect(
        pytester: pytest.Pytester, no_google_credentials: str, no_calls: str) -> None:
    result = _run(pytester, "--imagetime-model=gemini-image:vertex=true,project=p", no_calls)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
