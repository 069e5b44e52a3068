"""The shared endpoint client: the check before the first call, retries, the breaker and
redaction, with the real openai client against real local servers."""

from __future__ import annotations

import email.utils
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.backends.openai_client import (
    BREAKER_AFTER,
    MAX_RETRY_AFTER_S,
    Failure,
    backoff_s,
    redact,
    retry_after,
    safe_url,
)
from pytest_imagetime.cases.model import Case
from pytest_imagetime.judges.base import JudgeOptions, SheetToJudge
from pytest_imagetime.judges.vlm import VlmJudge
from pytest_imagetime.models.base import GenerationRequest, ModelError, ModelOptions
from pytest_imagetime.models.openai_images import OpenAIImagesModel
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.rubric.judgment import JudgeError, validate_judgment
from tests.fake_openai import ChatServer, ServerState, chat_server, closed_port_url, masked

KEY = "sk-proj-0123456789abcdefghijWXYZ"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as running:
        yield running


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def _judge(base_url: str, **overrides: object) -> VlmJudge:
    values: dict[str, object] = {"base_url": base_url, "retries": 1, "reasks": 1,
                                 "timeout_s": 5.0, "price_per_mtok": (2.0, 8.0),
                                 "concurrency": 1}
    values.update(overrides)
    return VlmJudge(None, options=JudgeOptions(**values))  # type: ignore[arg-type]


def _sheet(case: Case) -> SheetToJudge:
    image = ProceduralModel().generate(request=GenerationRequest(case, "prompt-only", 128, 1)).image
    return SheetToJudge(case, "prompt-only", image, Path("x.png"), "0" * 64)


def _posts(server: ChatServer) -> int:
    return len(server.state.requests)


# ------------------------------------------------------------ the check before the first call


def test_the_client_itself_never_retries(server: ChatServer, key: str) -> None:
    assert _judge(server.base_url).client().max_retries == 0


def test_a_refused_connection_stops_at_the_check(key: str, case: Case) -> None:
    judge = _judge(closed_port_url(), retries=2)
    with pytest.raises(JudgeError) as first:
        judge.judge(sheet=_sheet(case))
    text = str(first.value)
    assert text.startswith("not called: the judge endpoint failed once (checked with GET "
                           "/models before the first call: cannot reach the judge endpoint")
    assert "after 2 retries" in text  # the check tried three times
    assert "Check the base URL http://127.0.0.1:" in text
    assert "--imagetime-judge-base-url or OPENAI_BASE_URL" in text
    with pytest.raises(JudgeError, match=r"^not called: ") as second:
        judge.judge(sheet=_sheet(case))
    assert str(second.value) == text  # one reason for every item


def test_a_hanging_endpoint_stops_at_the_check(key: str, case: Case) -> None:
    with chat_server(ServerState(hang_s=2.0)) as hanging:
        judge = _judge(hanging.base_url, timeout_s=0.3, retries=1)
        with pytest.raises(JudgeError) as info:
            judge.judge(sheet=_sheet(case))
        assert "the judge endpoint timed out (0.3 s a request) after 1 retry" in str(info.value)
        assert "a server that is only slow needs a longer --imagetime-judge-timeout" \
            in str(info.value)
        assert _posts(hanging) == 0 and len(hanging.state.gets) == 2


@pytest.mark.parametrize("flavour", ["openai", "azure", "vllm"])
def test_a_rejected_key_stops_at_the_check_and_never_shows(
        monkeypatch: pytest.MonkeyPatch, case: Case, flavour: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with chat_server(ServerState(flavour=flavour, required_key="sk-the-right-one-123456")) \
            as rejecting:
        judge = _judge(rejecting.base_url)
        with pytest.raises(JudgeError) as info:
            judge.judge(sheet=_sheet(case))
        text = str(info.value)
        assert "HTTP 401 from the judge endpoint" in text and "after" not in text.split(":")[2]
        assert "Check the key in OPENAI_API_KEY (--imagetime-judge-key-env)" in text
        assert KEY not in text and masked(KEY) not in text and KEY[-4:] not in text
        assert _posts(rejecting) == 0


def test_a_key_that_may_not_list_models_is_not_stopped(key: str, case: Case) -> None:
    with chat_server(ServerState(models_forbidden=True)) as restricted:
        validate_judgment(_judge(restricted.base_url).judge(sheet=_sheet(case)), case,
                          "prompt-only")
        assert _posts(restricted) == 1


def test_a_server_without_a_model_list_is_judged(key: str, case: Case) -> None:
    with chat_server(ServerState(models=None)) as running:
        judgment = _judge(running.base_url).judge(sheet=_sheet(case))
        validate_judgment(judgment, case, "prompt-only")
        assert running.state.gets == ["/v1/models"]


# ------------------------------------------------------------ the breaker during a run


def test_the_same_400_from_the_first_calls_stops_the_run(server: ChatServer, key: str,
                                                         case: Case) -> None:
    judge = _judge(server.base_url, params={"temperature": 0}, retries=3)
    for _ in range(BREAKER_AFTER - 1):
        with pytest.raises(JudgeError, match=r"^HTTP 400 from the judge endpoint: "
                                             r"Unsupported value: 'temperature'"):
            judge.judge(sheet=_sheet(case))
    # The answer that stops the run says so, and what to check.
    with pytest.raises(JudgeError, match=rf"^the judge endpoint failed {BREAKER_AFTER} times "
                                         r"in a row \(HTTP 400.*Check the model name"):
        judge.judge(sheet=_sheet(case))
    assert _posts(server) == BREAKER_AFTER  # a 400 is never retried
    with pytest.raises(JudgeError) as info:
        judge.judge(sheet=_sheet(case))
    text = str(info.value)
    assert text.startswith(f"not called: the judge endpoint failed {BREAKER_AFTER} times in a "
                           f"row (HTTP 400 from the judge endpoint: Unsupported value: "
                           f"'temperature' does not support 0")
    assert "Check the model name 'gpt-5.5'" in text and "--imagetime-judge-param" in text
    assert _posts(server) == BREAKER_AFTER


def test_an_unknown_model_names_what_the_endpoint_lists(key: str, case: Case) -> None:
    with chat_server(ServerState(flavour="ollama", strict_models=True,
                                 models=["qwen2.5vl:7b", "llava:13b"])) as ollama:
        judge = _judge(ollama.base_url, model="qwen2.5vl:72b", key_env=None)
        for _ in range(BREAKER_AFTER):
            with pytest.raises(JudgeError, match=r'model "qwen2\.5vl:72b" not found, try pulling'):
                judge.judge(sheet=_sheet(case))
        with pytest.raises(JudgeError) as info:
            judge.judge(sheet=_sheet(case))
        assert "(the endpoint lists qwen2.5vl:7b, llava:13b; not 'qwen2.5vl:72b')" \
            in str(info.value)


def test_a_400_after_a_success_is_about_one_item(server: ChatServer, key: str,
                                                 case: Case) -> None:
    judge = _judge(server.base_url)
    judge.judge(sheet=_sheet(case))
    server.state.fault_queue = ["bad_request"] * (BREAKER_AFTER + 2)
    for _ in range(BREAKER_AFTER + 2):
        with pytest.raises(JudgeError, match=r"^HTTP 400 from the judge endpoint: Invalid image"):
            judge.judge(sheet=_sheet(case))
    validate_judgment(judge.judge(sheet=_sheet(case)), case, "prompt-only")


def test_timeouts_in_a_row_stop_new_calls_and_retries(server: ChatServer, key: str,
                                                      case: Case) -> None:
    judge = _judge(server.base_url, timeout_s=0.2, retries=2)
    judge.judge(sheet=_sheet(case))
    server.state.timeout_sleep_s = 1.0
    server.state.fault_queue = ["timeout"] * 20
    sent = _posts(server)
    with pytest.raises(JudgeError, match=r"timed out \(0.2 s a request\) after 2 retries"):
        judge.judge(sheet=_sheet(case))
    with pytest.raises(JudgeError) as info:
        judge.judge(sheet=_sheet(case))  # two more attempts, then the breaker: no third
    assert str(info.value).startswith(f"not called: the judge endpoint failed "
                                      f"{BREAKER_AFTER} times in a row (the judge endpoint "
                                      f"timed out")
    assert _posts(server) - sent == BREAKER_AFTER
    with pytest.raises(JudgeError, match=r"^not called: "):
        judge.judge(sheet=_sheet(case))
    assert _posts(server) - sent == BREAKER_AFTER


def test_a_blip_of_resets_does_not_stop_the_run(server: ChatServer, key: str,
                                                case: Case) -> None:
    judge = _judge(server.base_url, retries=0, reasks=0)
    judge.judge(sheet=_sheet(case))
    server.state.fault_queue = ["reset"] * BREAKER_AFTER
    for _ in range(BREAKER_AFTER):
        with pytest.raises(JudgeError, match="cannot reach the judge endpoint"):
            judge.judge(sheet=_sheet(case))
    assert not judge.endpoint.breaker.open  # the second check found the endpoint answering
    validate_judgment(judge.judge(sheet=_sheet(case)), case, "prompt-only")


def test_an_endpoint_that_goes_away_stops_the_run(key: str, case: Case) -> None:
    with chat_server() as running:
        judge = _judge(running.base_url, retries=0)
        judge.judge(sheet=_sheet(case))
    for _ in range(BREAKER_AFTER):
        with pytest.raises(JudgeError, match=r"^cannot reach the judge endpoint"):
            judge.judge(sheet=_sheet(case))
    with pytest.raises(JudgeError, match=f"^not called: the judge endpoint failed "
                                         f"{BREAKER_AFTER} times in a row"):
        judge.judge(sheet=_sheet(case))


def test_a_used_up_quota_is_not_retried_and_stops_the_run(server: ChatServer, key: str,
                                                          case: Case) -> None:
    judge = _judge(server.base_url, retries=3)
    judge.judge(sheet=_sheet(case))
    server.state.fault_queue = ["quota"] * 10
    for _ in range(BREAKER_AFTER - 1):
        with pytest.raises(JudgeError, match=r"^HTTP 429 from the judge endpoint: You "
                                             r"exceeded your current quota"):
            judge.judge(sheet=_sheet(case))
    with pytest.raises(JudgeError, match=r"^the judge endpoint failed .*exceeded your current "
                                         r"quota.*Check the key in OPENAI_API_KEY"):
        judge.judge(sheet=_sheet(case))
    assert _posts(server) == 1 + BREAKER_AFTER
    with pytest.raises(JudgeError, match=r"not called: .*Check the key in OPENAI_API_KEY"):
        judge.judge(sheet=_sheet(case))


def test_the_images_backend_stops_the_same_way(key: str, case: Case) -> None:
    with chat_server(ServerState(required_key="sk-the-right-one-123456")) as rejecting:
        model = OpenAIImagesModel(None, options=ModelOptions(base_url=rejecting.base_url))
        request = GenerationRequest(case, "prompt-only", 256, 1)
        for _ in range(3):
            with pytest.raises(ModelError) as info:
                model.generate(request=request)
            assert str(info.value).startswith("not called: the images endpoint failed once "
                                              "(checked with GET /models before the first "
                                              "call: HTTP 401 from the images endpoint: "
                                              "Incorrect API key provided: ***.")
            assert "Check the key in OPENAI_API_KEY (--imagetime-model-key-env)" \
                in str(info.value)
        assert _posts(rejecting) == 0


# ------------------------------------------------------------ retries and re-asks


def test_retries_and_reasks_are_separate_and_bounded(server: ChatServer, key: str,
                                                     case: Case) -> None:
    server.state.fault_queue = ["500", "schema", "503", "refusal"]
    with pytest.raises(JudgeError, match=r"^no valid judgment after 2 attempts: .*schema.*"
                                         r"refused"):
        _judge(server.base_url, retries=1, reasks=1).judge(sheet=_sheet(case))
    assert _posts(server) == 4  # (reasks + 1) x (retries + 1)


def test_a_choice_without_a_message_is_asked_again(server: ChatServer, key: str,
                                                   case: Case) -> None:
    server.state.fault_queue = ["no_message"]
    validate_judgment(_judge(server.base_url).judge(sheet=_sheet(case)), case, "prompt-only")
    assert _posts(server) == 2
    server.state.fault_queue = ["no_message"]
    with pytest.raises(JudgeError, match="the answer's choice has no message"):
        _judge(server.base_url, reasks=0).judge(sheet=_sheet(case))


def test_a_4xx_is_sent_once_and_claims_no_retries(server: ChatServer, key: str,
                                                  case: Case) -> None:
    judge = _judge(server.base_url, retries=5)
    judge.judge(sheet=_sheet(case))
    server.state.fault_queue = ["bad_request"]
    with pytest.raises(JudgeError) as info:
        judge.judge(sheet=_sheet(case))
    assert str(info.value) == ("HTTP 400 from the judge endpoint: Invalid image: the image "
                               "data is not readable.")
    assert _posts(server) == 2


def test_a_429_waits_as_asked_and_counts_its_retries(server: ChatServer, key: str,
                                                     case: Case) -> None:
    server.state.fault_queue = ["429_wait", "429_wait", "429_wait"]
    with pytest.raises(JudgeError, match=r"^HTTP 429 from the judge endpoint after 2 retries: "
                                         r"rate limited$"):
        _judge(server.base_url, retries=2).judge(sheet=_sheet(case))
    assert _posts(server) == 3


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "x", "retry-after": "1.5"}) == 1.5
    assert retry_after({}) is None and retry_after(None) is None
    assert retry_after({"retry-after": "soon"}) is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    found = retry_after({"retry-after": later})
    assert found is not None and 25 <= found <= 31


@given(st.integers(0, 20), st.none() | st.floats(0, 1000))
def test_backoff_is_bounded_and_honours_a_reasonable_wait(retry: int,
                                                          asked: float | None) -> None:
    wait = backoff_s(retry, asked)
    if asked is not None and asked <= MAX_RETRY_AFTER_S:
        assert wait == asked
    else:
        assert 0 < wait <= 8.0


# ------------------------------------------------------------ redaction


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("Incorrect API key provided: sk-proj-********************WXYZ. You can find",
         "sk-proj-****"),
        ("Received API Key = sk-pro...WXYZ, Key Hash", "WXYZ"),
        ("cannot reach http://alice:s3cret@gateway.local/v1: refused", "s3cret"),
        ("GET https://gw.local/v1/models?api-key=abc123&x=1", "abc123"),
        (f"echo {KEY}", KEY),
    ],
)
def test_redaction(text: str, hidden: str) -> None:
    cleaned = redact(text, [KEY])
    assert hidden not in cleaned and "***" in cleaned


def test_safe_urls() -> None:
    assert safe_url("http://user:pass@host:8000/v1") == "http://***@host:8000/v1"
    assert safe_url("https://gw.local/v1?key=abc&region=eu") == "https://gw.local/v1?key=***&region=eu"
    assert safe_url("http://localhost:11434/v1") == "http://localhost:11434/v1"
    assert safe_url(None) is None


def test_config_and_errors_never_hold_url_credentials(key: str, case: Case) -> None:
    with chat_server() as running:
        url = running.base_url.replace("http://", "http://alice:s3cret@")
        judge = _judge(url)
        assert judge.config()["base_url"] == running.base_url.replace("http://", "http://***@")
        validate_judgment(judge.judge(sheet=_sheet(case)), case, "prompt-only")
    for _ in range(BREAKER_AFTER + 1):
        with pytest.raises(JudgeError) as info:
            judge.judge(sheet=_sheet(case))
        assert "s3cret" not in str(info.value) and "alice" not in str(info.value)


_KEY_TEXT = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_"), min_size=16, max_size=60)


@given(_KEY_TEXT, st.integers(4, 30), st.text(max_size=40), st.text(max_size=40))
def test_no_form_of_a_key_survives_redaction(key: str, stars: int, before: str,
                                             after: str) -> None:
    for shown in (key, key[:8] + "*" * stars + key[-4:], key[:6] + "..." + key[-4:]):
        cleaned = redact(f"{before} {shown} {after}", [key])
        assert key not in cleaned and shown not in cleaned


@given(st.text(alphabet="abcdefghij0123456789", min_size=1, max_size=12),
       st.text(alphabet="abcdefghij0123456789!$%", min_size=1, max_size=12))
def test_no_url_credentials_survive(user: str, password: str) -> None:
    url = f"https://{user}:{password}@gateway.example/v1"
    shown = safe_url(url)
    assert shown == "https://***@gateway.example/v1"
    assert f"{user}:{password}@" not in redact(f"cannot reach {url}: refused")


class _ForwardProxy(ThreadingHTTPServer):
    """An HTTP forward proxy on 127.0.0.1 that sends every request on to ``target``."""

    daemon_threads = True

    def __init__(self, target: str) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.target = target
        self.seen: list[str] = []


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _ForwardProxy

    def log_message(self, format: str, *args: object) -> None:
        return

    def _forward(self) -> None:
        self.server.seen.append(self.path)  # the absolute URL a client sends a proxy
        path = urlsplit(self.path).path
        body = self.rfile.read(int(self.headers.get("content-length", "0") or 0))
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "proxy-connection", "connection")}
        request = urllib.request.Request(self.server.target + path, data=body or None,
                                         headers=headers, method=self.command)
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # not itself
        try:
            with direct.open(request, timeout=10) as answer:
                status, data, kind = answer.status, answer.read(), answer.headers["content-type"]
        except urllib.error.HTTPError as exc:
            status, data, kind = exc.code, exc.read(), exc.headers["content-type"]
        self.send_response(status)
        self.send_header("content-type", kind or "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _forward


def test_requests_go_through_the_proxy_of_the_environment(
        server: ChatServer, key: str, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    target = server.base_url.rsplit("/v1", 1)[0]
    proxy = _ForwardProxy(target)
    thread = threading.Thread(target=proxy.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        # A host name only the proxy can reach: the judge gets there through it or not at all.
        judge = _judge("http://judge.imagetime.invalid/v1")
        validate_judgment(judge.judge(sheet=_sheet(case)), case, "prompt-only")
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert proxy.seen == ["http://judge.imagetime.invalid/v1/models",
                          "http://judge.imagetime.invalid/v1/chat/completions"]


def test_server_errors_differing_only_in_their_request_id_are_the_same_failure() -> None:
    first, second = (Failure("status", 500, f"The server had an error. (Please include the "
                                            f"request ID req_{rid} in your message.)", True)
                     for rid in ("8f3a9c01d2", "77b0e4aa19"))
    assert first.signature == second.signature
    assert Failure("status", 400, "Unsupported value: 'temperature'", False).signature != \
        Failure("status", 400, "Unsupported parameter: 'max_tokens'", False).signature


def test_a_model_the_endpoint_does_not_serve_stops_at_its_first_404(key: str,
                                                                    case: Case) -> None:
    with chat_server(ServerState(strict_models=True)) as running:
        judge = _judge(running.base_url, model="gpt-retired-1", retries=3)
        with pytest.raises(JudgeError, match=r"^the judge endpoint failed once \(HTTP 404.*"
                                             r"gpt-retired-1.*Check the model name "
                                             r"'gpt-retired-1' \(the endpoint lists "):
            judge.judge(sheet=_sheet(case))
        with pytest.raises(JudgeError, match=r"^not called: the judge endpoint failed once"):
            judge.judge(sheet=_sheet(case))
        assert _posts(running) == 1
