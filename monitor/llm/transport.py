"""One question to an OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, ...).

Structured output is asked for in the strongest form the server accepts: a strict JSON schema, then
`json_object` with the schema attached (llama.cpp's extension), then plain `json_object`, then plain
text. The first form that works is remembered for the life of the transport; one worker probes while
the others wait, so probing costs one failed request per run at most. Only a 4xx or 501, or a 500 whose
message names the form, says a form is unsupported; any other 5xx is a failure. Transient failures (429,
5xx, timeouts, dropped connections) are retried a bounded number of times, waiting what the server's
`Retry-After` asks, else backing off exponentially. A server that answers nothing but failures (5xx,
429) for `llm.server_failure_seconds` trips a second breaker: ServerUnavailable stops the run.

A reply cut off (at the token limit, or a body that ends early) is a truncated answer (TruncatedReply):
an answer failure of the pair, never "cannot reach the server", and not corrected or retried.

Against a server that runs one request at a time (llama.cpp, Ollama), parallel requests turn into
timeouts the server keeps working on: each timeout halves the requests allowed in flight, down to one,
and says so in `drain_warnings`. A server nobody answers on (connection refused) gets one retry per
call, and after `UNREACHABLE_CALLS` such calls in a row the transport raises ServerUnavailable, which
stops the run. Every HTTP request, failed or not, is handed to the recorder; the API key is never part
of it. A stage asks its own `Question` (messages, schema, parser, corrective turn) through it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import openai
from openai import OpenAI
from tenacity import RetryCallState, Retrying, retry_if_exception

from monitor.backoff import backoff_seconds
from monitor.config import LLMSettings
from monitor.errors import ConfigError, JudgeError
from monitor.llm.answers import AnswerRejected, InvalidAnswer, looks_like_refusal
from monitor.llm.cost import cached_of, estimate_tokens, messages_tokens
from monitor.llm.retry import (
    MAX_BACKOFF_SECONDS,
    FailureStreak,
    InFlightLimit,
    ServerUnavailable,
    TruncatedReply,
    cut_off,
    refused_connection,
    retry_after_seconds,
    safe_url,
    server_failure,
    status_of,
    unsupported_form,
)
from monitor.llm.texts import Exchange, Recorder

log = logging.getLogger(__name__)
T = TypeVar("T")
Mode = Literal["json_schema", "json_object_schema", "json_object", "text"]
MODES: tuple[Mode, ...] = ("json_schema", "json_object_schema", "json_object", "text")
# Calls in a row that could not connect at all (after their retry) before the run gives up on the server.
UNREACHABLE_CALLS = 3
# Attempts per call when nothing answers on the port: a refused connection rarely heals in seconds.
_CONNECT_ATTEMPTS = 2


@dataclass(frozen=True)
class Question(Generic[T]):
    """What a stage asks: the messages, the answer's shape, and how to read and correct a reply."""

    messages: list[dict[str, str]]
    schema_name: str
    schema: Callable[[bool], dict[str, Any]]  # bounds -> schema (strict mode rejects array bounds)
    max_tokens: int
    parse: Callable[[str | None], T]  # raises InvalidAnswer saying what is wrong
    correction: Callable[[str], str]  # the corrective turn's text for a problem
    temperature: float | None = None  # None: llm.temperature


@dataclass
class Completion:
    """One successful chat completion, with what it cost."""

    request: dict[str, Any]
    mode: Mode
    text: str | None
    refusal: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    attempt: int
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache


class ChatTransport:
    """Chat calls to one server and model, recorded under `provider` and `prompt_version`."""

    def __init__(
        self,
        settings: LLMSettings,
        provider: str,
        prompt_version: str,
        client: OpenAI | None = None,
        connect: bool = True,
    ) -> None:
        """`connect=False` (an estimate, which calls nothing): no client is made until one is used, so
        neither a key nor a base URL is needed."""
        self.settings = settings
        self.provider = provider
        self.model = settings.model
        self.prompt_version = prompt_version
        self._secret = settings.api_key.get_secret_value() if settings.api_key else ""
        self._client = client if client is not None or not connect else self._make_client()
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()  # one worker probes the response form; the others wait
        self._mode: Mode | None = None if settings.response_format == "auto" else settings.response_format
        self.in_flight = InFlightLimit(max(1, settings.concurrency))
        self._unreachable = 0  # calls in a row that could not connect
        self._failures = FailureStreak(settings.server_failure_seconds)
        self._warnings: list[str] = []

    @property
    def mode(self) -> Mode | None:
        """The response form this server was found to accept (None until the first success)."""
        return self._mode

    @property
    def client(self) -> OpenAI:
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def drain_warnings(self) -> list[str]:
        """What the run should be told (concurrency lowered), once each."""
        with self._lock:
            out, self._warnings = self._warnings, []
        return out

    def ask(self, question: Question[T], where: str, recorder: Recorder | None) -> tuple[T, int | None]:
        """The question answered and parsed, with one corrective turn for a bad answer.

        Returns the parsed answer and the id of the exchange that gave it. Refusals, and answers still
        invalid after the corrective turn, raise AnswerRejected (the pairs stay pending for a rerun).
        """
        problem = ""
        messages = question.messages
        for turn in (1, 2):
            done = self._complete(question, messages, recorder, where)
            if done.refusal or done.finish_reason == "content_filter":
                reason = done.refusal or "content filter"
                self._record(recorder, done, error=f"refusal: {reason}", turn=turn)
                raise AnswerRejected(f"{where}: the model refused: {reason[:200]}")
            try:
                answer = question.parse(done.text)
            except InvalidAnswer as exc:
                if looks_like_refusal(done.text):
                    self._record(recorder, done, error=f"refusal: {(done.text or '')[:500]}", turn=turn)
                    raise AnswerRejected(f"{where}: the model refused: {(done.text or '')[:200]}") from None
                if done.finish_reason == "length":
                    # A corrective turn would be cut off at the same limit: say what to change instead.
                    problem = (
                        f"truncated answer: the reply was cut off at the token limit (max_tokens "
                        f"{question.max_tokens}); raise judge.max_output_tokens or shorten the prompt"
                    )
                    self._record(recorder, done, error=problem, turn=turn)
                    raise TruncatedReply(f"{where}: {problem}") from None
                problem = str(exc)
                self._record(recorder, done, error=f"invalid answer: {problem}", turn=turn)
                # One corrective turn: show the model its answer and what was wrong with it.
                messages = [
                    *messages,
                    {"role": "assistant", "content": done.text or ""},
                    {"role": "user", "content": question.correction(problem)},
                ]
                continue
            return answer, self._record(recorder, done, error=None, turn=turn)
        raise AnswerRejected(f"{where}: invalid answer after a corrective retry: {problem}")

    def request_body(
        self, question: Question[Any], mode: Mode, messages: list[dict[str, str]] | None = None
    ) -> dict[str, Any]:
        """The request for `question` (or a later turn's `messages`) in response form `mode`."""
        temperature = self.settings.temperature if question.temperature is None else question.temperature
        request: dict[str, Any] = {
            "model": self.model,
            "messages": question.messages if messages is None else messages,
            "temperature": temperature,
            "max_tokens": question.max_tokens,
        }
        if mode == "json_schema":
            schema = {"name": question.schema_name, "strict": True, "schema": question.schema(False)}
            request["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif mode == "json_object_schema":
            request["response_format"] = {"type": "json_object", "schema": question.schema(True)}
        elif mode == "json_object":
            request["response_format"] = {"type": "json_object"}
        return request

    # --- one request, in the best form the server accepts -------------------------------------

    def _modes(self) -> tuple[Mode, ...]:
        return (self._mode,) if self._mode else MODES

    def _complete(
        self, question: Question[Any], messages: list[dict[str, str]], recorder: Recorder | None, where: str
    ) -> Completion:
        if self._mode is None:
            # Until a form is known, one call at a time probes; the rest then go straight to it.
            with self._probe_lock:
                if self._mode is None:
                    return self._complete_in(question, messages, recorder, where)
        return self._complete_in(question, messages, recorder, where)

    def _complete_in(
        self, question: Question[Any], messages: list[dict[str, str]], recorder: Recorder | None, where: str
    ) -> Completion:
        self._check_reachable()
        modes = self._modes()
        for index, mode in enumerate(modes):
            probing = self._mode is None and index < len(modes) - 1
            request = self.request_body(question, mode, messages)
            try:
                done = self._send(request, mode, probing, recorder)
            except openai.APIConnectionError as exc:
                if cut_off(exc):
                    raise TruncatedReply(f"{where}: {self.describe(exc)}") from None
                if refused_connection(exc):
                    self._connect_failed(exc)
                raise JudgeError(f"{where}: {self.describe(exc)}") from None
            except openai.APIStatusError as exc:
                self._connected()
                if probing and unsupported_form(exc):
                    continue  # this server does not take this form; try the next one
                raise self._status_error(exc, where) from None
            except openai.APIError as exc:
                raise JudgeError(f"{where}: {self.describe(exc)}") from None
            self._connected()
            with self._lock:
                if self._mode is None:
                    self._mode = mode
            return done
        raise JudgeError(
            f"{where}: the server accepted no request form"
        )  # pragma: no cover - text never probes

    def _status_error(self, exc: openai.APIStatusError, where: str) -> JudgeError:
        """What a request the server answered with an error (after its retries) ends the call with."""
        if exc.status_code in (401, 403, 404):
            return ServerUnavailable(f"{where}: {self.describe(exc)}")
        if self._failures.open:
            return ServerUnavailable(self._failing_message())
        return JudgeError(f"{where}: {self.describe(exc)}")

    # --- an unreachable server --------------------------------------------------------------------

    def _unreachable_message(self, exc: BaseException | None = None) -> str:
        cause = f" ({exc.__class__.__name__})" if exc is not None else ""
        return (
            f"cannot reach the judge server at {safe_url(str(self.client.base_url))}: "
            f"{UNREACHABLE_CALLS} calls in a row failed to connect{cause}; is it running "
            "(llm.base_url / OPENAI_BASE_URL)?"
        )

    def _failing_message(self) -> str:
        streak = self._failures
        return (
            f"the judge server at {safe_url(str(self.client.base_url))} failed {streak.count} requests in a "
            f"row over {streak.seconds:.0f}s (last: {streak.last}); stopped asking it "
            f"(llm.server_failure_seconds = {streak.window:g}). What was judged is kept; run again "
            "once the server answers"
        )

    def _check_reachable(self) -> None:
        # Once a breaker is open, calls already handed out fail without another request.
        if self._unreachable >= UNREACHABLE_CALLS:
            raise ServerUnavailable(self._unreachable_message())
        if self._failures.open:
            raise ServerUnavailable(self._failing_message())

    def _connect_failed(self, exc: BaseException) -> None:
        with self._lock:
            self._unreachable += 1
            tripped = self._unreachable >= UNREACHABLE_CALLS
        if tripped:
            raise ServerUnavailable(self._unreachable_message(exc)) from None

    def _connected(self) -> None:
        with self._lock:
            self._unreachable = 0

    # --- sending, with retries ------------------------------------------------------------------------

    def _send(
        self, request: dict[str, Any], mode: Mode, probing: bool, recorder: Recorder | None
    ) -> Completion:
        """POST one request, retrying transient failures; each failed attempt is recorded."""
        attempt_no = 0

        def once() -> Completion:
            nonlocal attempt_no
            attempt_no += 1
            return self._post(request, mode, attempt_no, recorder)

        retrying = Retrying(
            stop=self._stop,
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._transient(exc, probing)),
            reraise=True,
        )
        return retrying(once)

    def _post(
        self, request: dict[str, Any], mode: Mode, attempt: int, recorder: Recorder | None
    ) -> Completion:
        with self.in_flight:
            started = time.monotonic()
            try:
                response = self.client.chat.completions.create(**request)
            except openai.APIError as exc:
                latency = int((time.monotonic() - started) * 1000)
                if isinstance(exc, openai.APITimeoutError):
                    self._timed_out()
                self._count(exc)
                self._record_failure(recorder, request, mode, latency, attempt, exc)
                raise
            except ValueError as exc:
                # A 200 whose body is not JSON (a proxy's error page, or JSON cut off): the client raises a
                # plain JSONDecodeError. Make it the pair's error, so the run goes on and a rerun retries it.
                latency = int((time.monotonic() - started) * 1000)
                self._record_failure(recorder, request, mode, latency, attempt, exc)
                if _ends_mid_json(exc):
                    raise TruncatedReply(
                        f"truncated answer: the server's reply ends mid-JSON after {len(exc.doc)} characters"  # type: ignore[attr-defined]
                    ) from None
                raise JudgeError(f"unreadable reply from the server (not JSON: {str(exc)[:120]})") from None
            latency = int((time.monotonic() - started) * 1000)
            self._failures.answered()
        choice = response.choices[0] if response.choices else None
        message = choice.message if choice else None
        usage = response.usage
        return Completion(
            request=request,
            mode=mode,
            text=message.content if message else None,
            refusal=getattr(message, "refusal", None) if message else None,
            finish_reason=choice.finish_reason if choice else None,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_ms=latency,
            attempt=attempt,
            cached_tokens=cached_of(usage),
        )

    def _count(self, exc: openai.APIError) -> None:
        """Keep the failure streak: a failed request adds to it, any other answer ends it."""
        if server_failure(status := status_of(exc)):
            self._failures.failed(self.describe(exc)[:200])
        elif status is not None:
            self._failures.answered()

    def _stop(self, state: RetryCallState) -> bool:
        if state.attempt_number >= self.settings.max_retries + 1 or self._failures.open:
            return True
        exc = state.outcome.exception() if state.outcome else None
        return refused_connection(exc) and state.attempt_number >= _CONNECT_ATTEMPTS

    def _timed_out(self) -> None:
        """A request timed out: the server is likely busy with others, so send fewer at once."""
        if (change := self.in_flight.halve()) is None:
            return
        old, new = change
        message = (
            f"judge: a request timed out after {self.settings.timeout_seconds:g}s; requests in flight "
            f"lowered from {old} to {new} for the rest of the run (a one-slot server such as llama.cpp "
            "or Ollama wants llm.concurrency = 1 and a longer llm.timeout_seconds)"
        )
        log.warning("%s", message)
        with self._lock:
            self._warnings.append(message)

    def _transient(self, exc: BaseException, probing: bool) -> bool:
        if isinstance(exc, openai.APIConnectionError):  # includes timeouts
            return not cut_off(exc)  # a reply cut off is an answer, not a lost connection
        status = status_of(exc)
        if status is None:
            return False
        if probing and unsupported_form(exc):
            return False
        wait = retry_after_seconds(exc)
        if wait is not None and wait > self.settings.max_retry_wait_seconds:
            return False  # the server asks for longer than we are willing to block
        return server_failure(status)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = retry_after_seconds(exc) if exc else None
        first = self.settings.backoff_seconds
        return backoff_seconds(state.attempt_number - 1, first, MAX_BACKOFF_SECONDS, jitter=0.25, asked=asked)

    # --- recording ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def describe(self, exc: BaseException) -> str:
        """A failed request in words fit for logs and the run: no API key, at most 500 characters."""
        status = status_of(exc)
        if isinstance(exc, openai.APITimeoutError):
            return f"request timed out after {self.settings.timeout_seconds:g}s"
        if cut_off(exc):
            return (
                "truncated answer: the server's reply was cut off before its end; if it repeats, raise "
                "judge.max_output_tokens or shorten the prompt"
            )
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot reach the judge server ({exc.__class__.__name__})"
        message = getattr(exc, "message", None) or str(exc)
        return self.redact(f"HTTP {status}: {message}" if status else message)[:500]

    def _record_failure(
        self,
        recorder: Recorder | None,
        request: dict[str, Any],
        mode: Mode,
        latency: int,
        attempt: int,
        exc: BaseException,
    ) -> None:
        if recorder is None:
            return
        body = None
        response = getattr(exc, "response", None)
        if response is not None:
            try:
                body = self.redact(response.text)[:2000]
            except Exception:  # noqa: BLE001 - a streamed or closed body is not worth failing over
                body = None
        recorder(
            Exchange(
                provider=self.provider,
                model=self.model,
                prompt_version=self.prompt_version,
                request=request,
                response=body,
                response_format=mode,
                latency_ms=latency,
                error=self.describe(exc),
                extra={"attempt": attempt},
            )
        )

    def _record(
        self, recorder: Recorder | None, done: Completion, error: str | None, turn: int
    ) -> int | None:
        if recorder is None:
            return None
        estimated = None
        if not (done.prompt_tokens or done.completion_tokens):  # the server reported no usage
            reply = done.text if done.text is not None else done.refusal
            estimated = (messages_tokens(done.request["messages"]), estimate_tokens(reply or ""))
        return recorder(
            Exchange(
                provider=self.provider,
                model=self.model,
                prompt_version=self.prompt_version,
                request=done.request,
                response=done.text if done.text is not None else done.refusal,
                response_format=done.mode,
                prompt_tokens=done.prompt_tokens,
                completion_tokens=done.completion_tokens,
                cached_tokens=done.cached_tokens,
                latency_ms=done.latency_ms,
                error=error,
                extra={"attempt": done.attempt, "turn": turn, "finish_reason": done.finish_reason},
                estimated=estimated,
            )
        )

    def _make_client(self) -> OpenAI:
        key = self._secret
        if not key:
            if not self.settings.base_url:
                raise ConfigError(
                    "judge provider 'openai' needs an API key (OPENAI_API_KEY or llm.api_key) "
                    "or llm.base_url of an OpenAI-compatible server"
                )
            key = "no-key"  # local servers ignore it; the client insists on one
        return OpenAI(
            api_key=key, base_url=self.settings.base_url, timeout=self.settings.timeout_seconds, max_retries=0
        )


def _ends_mid_json(exc: ValueError) -> bool:
    """A reply body that starts as a JSON object and stops before it is complete."""
    if not isinstance(exc, json.JSONDecodeError):
        return False
    body = exc.doc.rstrip()
    return body.startswith("{") and (exc.pos >= len(body) or exc.msg.startswith("Unterminated"))
