"""The `openai` provider: any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, ...).

Structured output is asked for in the strongest form the server accepts: a strict JSON schema, then
`json_object` with the schema attached (llama.cpp's extension), then plain `json_object`, then plain
text. The first form that works is remembered for the life of the judge; one worker probes while the
others wait, so probing costs one failed request per run at most. Transient failures (429, 5xx,
timeouts, dropped connections) are retried a bounded number of times, waiting what the server's
`Retry-After` asks, else backing off exponentially.

Against a server that runs one request at a time (llama.cpp, Ollama), parallel requests turn into
timeouts the server keeps working on: each timeout halves the requests allowed in flight, down to one,
and says so in `warnings`. A server nobody answers on (connection refused) gets one retry per call, and
after `UNREACHABLE_CALLS` such calls in a row the judge raises JudgeUnavailable, which stops the run.
Every HTTP request, failed or not, is handed to the recorder; the API key is never part of it.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import openai
from openai import OpenAI
from tenacity import RetryCallState, Retrying, retry_if_exception

from monitor.config import JudgeSettings
from monitor.errors import ConfigError, JudgeError
from monitor.judge.base import ClaimText, Exchange, Judge, Judgement, PaperText, Recorder
from monitor.judge.prompts import JudgePrompts, load_prompts
from monitor.judge.schema import InvalidAnswer, looks_like_refusal, parse_answer, response_schema

log = logging.getLogger(__name__)
T = TypeVar("T")
Mode = Literal["json_schema", "json_object_schema", "json_object", "text"]
MODES: tuple[Mode, ...] = ("json_schema", "json_object_schema", "json_object", "text")
# Status codes with which a server says "I do not support that request form" (llama.cpp: 500).
_UNSUPPORTED = {400, 404, 415, 422, 500, 501}
_MAX_BACKOFF_SECONDS = 30.0
# Calls in a row that could not connect at all (after their retry) before the run gives up on the server.
UNREACHABLE_CALLS = 3
# Attempts per call when nothing answers on the port: a refused connection rarely heals in seconds.
_CONNECT_ATTEMPTS = 2


class JudgeUnavailable(JudgeError):
    """The server refuses every request (bad key, no such model): judging more pairs is pointless.

    `fatal` tells the runner to start no further call.
    """

    fatal = True


class AnswerRejected(JudgeError):
    """The server answered, but not usably for these pairs (refused, or invalid after a correction).

    `pair_fault` tells the runner the pairs themselves are the trouble, so repeat failures get parked.
    """

    pair_fault = True


class InFlightLimit:
    """How many requests may be in flight at once; lowered (never raised) when the server times out."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._active = 0
        self._cond = threading.Condition()

    def __enter__(self) -> InFlightLimit:
        with self._cond:
            self._cond.wait_for(lambda: self._active < self.limit)
            self._active += 1
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify()

    def halve(self) -> tuple[int, int] | None:
        """Halve the limit (down to 1); returns (old, new), or None when it was 1 already."""
        with self._cond:
            if self.limit == 1:
                return None
            old, self.limit = self.limit, max(1, self.limit // 2)
            return old, self.limit


def safe_url(url: str) -> str:
    """A base URL fit for messages: without user:password@, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a failed response asks for (`retry-after-ms`, `retry-after` seconds or HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _status(exc: BaseException) -> int | None:
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


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


class OpenAIJudge(Judge):
    """A judge backed by an OpenAI-compatible server; see the module docstring for its protocol."""

    name = "openai"

    def __init__(
        self, settings: JudgeSettings, prompts: JudgePrompts | None = None, client: OpenAI | None = None
    ) -> None:
        self.settings = settings
        self.prompts = prompts or load_prompts(settings.prompts_dir)
        self.model = settings.model
        self.prompt_version = self.prompts.version
        self.claims_per_call = max(1, settings.claims_per_call)
        self.max_concurrency = max(1, settings.concurrency)
        self._secret = settings.api_key.get_secret_value() if settings.api_key else ""
        self.client = client or self._make_client()
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()  # one worker probes the response form; the others wait
        self._mode: Mode | None = None if settings.response_format == "auto" else settings.response_format
        self.in_flight = InFlightLimit(self.max_concurrency)
        self._unreachable = 0  # calls in a row that could not connect
        self._warnings: list[str] = []

    def drain_warnings(self) -> list[str]:
        """What the run should be told (concurrency lowered), once each."""
        with self._lock:
            out, self._warnings = self._warnings, []
        return out

    # --- public -----------------------------------------------------------------------------

    @property
    def mode(self) -> Mode | None:
        """The response form this server was found to accept (None until the first success)."""
        return self._mode

    def judge(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> list[Judgement]:
        ids = [c.id for c in claims]
        where = f"{paper.arxiv_id}v{paper.version}"
        judgements, exchange_id = self.ask(
            self.prompts.messages(paper, claims),
            ids,
            where,
            recorder,
            parse=lambda text: parse_answer(text, ids),
            correction=lambda problem: self.prompts.correction(problem, ids),
        )
        for judgement in judgements:
            judgement.exchange_id = exchange_id
        return judgements

    def ask(
        self,
        messages: list[dict[str, str]],
        ids: list[str],
        where: str,
        recorder: Recorder | None,
        parse: Callable[[str | None], T],
        correction: Callable[[str], str],
    ) -> tuple[T, int | None]:
        """One question about `ids`, answered and parsed, with one corrective turn for a bad answer.

        Returns the parsed answer and the id of the exchange that gave it. Refusals, and answers still
        invalid after the corrective turn, raise JudgeError (the pairs stay pending for a rerun).
        """
        problem = ""
        for turn in (1, 2):
            done = self._complete(messages, ids, recorder, where)
            if done.refusal or done.finish_reason == "content_filter":
                reason = done.refusal or "content filter"
                self._record(recorder, done, error=f"refusal: {reason}", turn=turn)
                raise AnswerRejected(f"{where}: the model refused: {reason[:200]}")
            try:
                answer = parse(done.text)
            except InvalidAnswer as exc:
                if looks_like_refusal(done.text):
                    self._record(recorder, done, error=f"refusal: {(done.text or '')[:500]}", turn=turn)
                    raise AnswerRejected(f"{where}: the model refused: {(done.text or '')[:200]}") from None
                problem = str(exc)
                if done.finish_reason == "length":
                    problem += " (the reply was cut off at the token limit)"
                self._record(recorder, done, error=f"invalid answer: {problem}", turn=turn)
                # One corrective turn: show the model its answer and what was wrong with it.
                messages = [
                    *messages,
                    {"role": "assistant", "content": done.text or ""},
                    {"role": "user", "content": correction(problem)},
                ]
                continue
            return answer, self._record(recorder, done, error=None, turn=turn)
        raise AnswerRejected(f"{where}: invalid answer after a corrective retry: {problem}")

    # --- one request, in the best form the server accepts -------------------------------------

    def _modes(self) -> tuple[Mode, ...]:
        return (self._mode,) if self._mode else MODES

    # What the answer is called and shaped like; a subclass asking another question overrides these.
    schema_name = "claim_assessments"

    def schema(self, ids: list[str], bounds: bool = False) -> dict[str, Any]:
        return response_schema(ids, bounds=bounds)

    def max_tokens(self, ids: list[str]) -> int:
        return self.settings.max_output_tokens * len(ids)

    def request_body(self, messages: list[dict[str, str]], ids: list[str], mode: Mode) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": self.max_tokens(ids),
        }
        if mode == "json_schema":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": self.schema_name, "strict": True, "schema": self.schema(ids)},
            }
        elif mode == "json_object_schema":
            request["response_format"] = {"type": "json_object", "schema": self.schema(ids, bounds=True)}
        elif mode == "json_object":
            request["response_format"] = {"type": "json_object"}
        return request

    def _complete(
        self, messages: list[dict[str, str]], ids: list[str], recorder: Recorder | None, where: str
    ) -> Completion:
        if self._mode is None:
            # Until a form is known, one call at a time probes; the rest then go straight to it.
            with self._probe_lock:
                if self._mode is None:
                    return self._complete_in(self._modes(), messages, ids, recorder, where)
        return self._complete_in(self._modes(), messages, ids, recorder, where)

    def _complete_in(
        self,
        modes: tuple[Mode, ...],
        messages: list[dict[str, str]],
        ids: list[str],
        recorder: Recorder | None,
        where: str,
    ) -> Completion:
        self._check_reachable()
        for index, mode in enumerate(modes):
            probing = self._mode is None and index < len(modes) - 1
            request = self.request_body(messages, ids, mode)
            try:
                done = self._send(request, mode, probing, recorder)
            except openai.APIConnectionError as exc:
                if not isinstance(exc, openai.APITimeoutError):
                    self._connect_failed(exc)
                raise JudgeError(f"{where}: {self._describe(exc)}") from None
            except openai.APIStatusError as exc:
                self._connected()
                if probing and exc.status_code in _UNSUPPORTED:
                    continue  # this server does not take this form; try the next one
                if exc.status_code in (401, 403, 404):
                    raise JudgeUnavailable(f"{where}: {self._describe(exc)}") from None
                raise JudgeError(f"{where}: {self._describe(exc)}") from None
            except openai.APIError as exc:
                raise JudgeError(f"{where}: {self._describe(exc)}") from None
            self._connected()
            with self._lock:
                if self._mode is None:
                    self._mode = mode
            return done
        raise JudgeError(
            f"{where}: the server accepted no request form"
        )  # pragma: no cover - text never probes

    # --- an unreachable server --------------------------------------------------------------------

    def _unreachable_message(self, exc: BaseException | None = None) -> str:
        cause = f" ({exc.__class__.__name__})" if exc is not None else ""
        return (
            f"cannot reach the judge server at {safe_url(str(self.client.base_url))}: "
            f"{UNREACHABLE_CALLS} calls in a row failed to connect{cause}; is it running "
            "(judge.base_url / OPENAI_BASE_URL)?"
        )

    def _check_reachable(self) -> None:
        # Once the breaker is open, calls already handed out fail without another connection attempt.
        if self._unreachable >= UNREACHABLE_CALLS:
            raise JudgeUnavailable(self._unreachable_message())

    def _connect_failed(self, exc: BaseException) -> None:
        with self._lock:
            self._unreachable += 1
            tripped = self._unreachable >= UNREACHABLE_CALLS
        if tripped:
            raise JudgeUnavailable(self._unreachable_message(exc)) from None

    def _connected(self) -> None:
        with self._lock:
            self._unreachable = 0

    def _send(
        self, request: dict[str, Any], mode: Mode, probing: bool, recorder: Recorder | None
    ) -> Completion:
        """POST one request, retrying transient failures; each failed attempt is recorded."""
        attempt_no = 0

        def once() -> Completion:
            nonlocal attempt_no
            attempt_no += 1
            with self.in_flight:
                started = time.monotonic()
                try:
                    response = self.client.chat.completions.create(**request)
                except openai.APIError as exc:
                    latency = int((time.monotonic() - started) * 1000)
                    if isinstance(exc, openai.APITimeoutError):
                        self._timed_out()
                    self._record_failure(recorder, request, mode, latency, attempt_no, exc)
                    raise
                except ValueError as exc:
                    # A 200 whose body is not JSON (a proxy's error page): the client raises a plain
                    # JSONDecodeError. Make it the pair's error, so the run goes on and a rerun retries it.
                    latency = int((time.monotonic() - started) * 1000)
                    self._record_failure(recorder, request, mode, latency, attempt_no, exc)
                    raise JudgeError(
                        f"unreadable reply from the server (not JSON: {str(exc)[:120]})"
                    ) from None
                latency = int((time.monotonic() - started) * 1000)
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
                attempt=attempt_no,
            )

        retrying = Retrying(
            stop=self._stop,
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._transient(exc, probing)),
            reraise=True,
        )
        return retrying(once)

    def _stop(self, state: RetryCallState) -> bool:
        if state.attempt_number >= self.settings.max_retries + 1:
            return True
        exc = state.outcome.exception() if state.outcome else None
        refused = isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)
        return refused and state.attempt_number >= _CONNECT_ATTEMPTS

    def _timed_out(self) -> None:
        """A request timed out: the server is likely busy with others, so send fewer at once."""
        if (change := self.in_flight.halve()) is None:
            return
        old, new = change
        message = (
            f"judge: a request timed out after {self.settings.timeout_seconds:g}s; requests in flight "
            f"lowered from {old} to {new} for the rest of the run (a one-slot server such as llama.cpp "
            "or Ollama wants judge.concurrency = 1 and a longer judge.timeout_seconds)"
        )
        log.warning("%s", message)
        with self._lock:
            self._warnings.append(message)

    def _transient(self, exc: BaseException, probing: bool) -> bool:
        if isinstance(exc, openai.APIConnectionError):  # includes timeouts
            return True
        status = _status(exc)
        if status is None:
            return False
        if probing and status in _UNSUPPORTED:
            return False
        wait = retry_after_seconds(exc)
        if wait is not None and wait > self.settings.max_retry_wait_seconds:
            return False  # the server asks for longer than we are willing to block
        return status in (408, 409, 429) or status >= 500

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = retry_after_seconds(exc) if exc else None
        if asked is not None:
            return asked
        backoff = self.settings.backoff_seconds * 2 ** (state.attempt_number - 1)
        return min(backoff, _MAX_BACKOFF_SECONDS) * random.uniform(0.75, 1.0)

    # --- recording ---------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def _describe(self, exc: BaseException) -> str:
        status = _status(exc)
        if isinstance(exc, openai.APITimeoutError):
            return f"request timed out after {self.settings.timeout_seconds:g}s"
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot reach the judge server ({exc.__class__.__name__})"
        message = getattr(exc, "message", None) or str(exc)
        return self._redact(f"HTTP {status}: {message}" if status else message)[:500]

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
                body = self._redact(response.text)[:2000]
            except Exception:  # noqa: BLE001 - a streamed or closed body is not worth failing over
                body = None
        recorder(
            Exchange(
                provider=self.name,
                model=self.model,
                prompt_version=self.prompt_version,
                request=request,
                response=body,
                response_format=mode,
                latency_ms=latency,
                error=self._describe(exc),
                extra={"attempt": attempt},
            )
        )

    def _record(
        self, recorder: Recorder | None, done: Completion, error: str | None, turn: int = 1
    ) -> int | None:
        if recorder is None:
            return None
        return recorder(
            Exchange(
                provider=self.name,
                model=self.model,
                prompt_version=self.prompt_version,
                request=done.request,
                response=done.text if done.text is not None else done.refusal,
                response_format=done.mode,
                prompt_tokens=done.prompt_tokens,
                completion_tokens=done.completion_tokens,
                latency_ms=done.latency_ms,
                error=error,
                extra={"attempt": done.attempt, "turn": turn, "finish_reason": done.finish_reason},
            )
        )

    def _make_client(self) -> OpenAI:
        key = self._secret
        if not key:
            if not self.settings.base_url:
                raise ConfigError(
                    "judge provider 'openai' needs an API key (OPENAI_API_KEY or judge.api_key) "
                    "or judge.base_url of an OpenAI-compatible server"
                )
            key = "no-key"  # local servers ignore it; the client insists on one
        return OpenAI(
            api_key=key, base_url=self.settings.base_url, timeout=self.settings.timeout_seconds, max_retries=0
        )
