"""The claim board's routes (Starlette): pages that read, forms that write through the review stage.

Every decision goes through `monitor.review.queue.record` and verdicts are refreshed as
`monitor review set` refreshes them, so a browser decision is the same row a terminal one is.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlencode

import anyio
import anyio.to_thread
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from monitor.config import Settings
from monitor.errors import MonitorError
from monitor.judge_names import shown_judge
from monitor.report.feed import ATOM, feed_xml
from monitor.review.queue import Recorded, record
from monitor.review.rewording import accept, reject
from monitor.review.session import refresh_verdicts
from monitor.sources.base import arxiv_url
from monitor.store.db import Store
from monitor.verdicts.rules import STATUSES
from monitor.web import pages
from monitor.web.plot import layout
from monitor.web.security import SESSION_COOKIE, SESSION_SECONDS, Guard, clean_name, new_form_token

log = logging.getLogger(__name__)
T = TypeVar("T")
TEMPLATES = Path(__file__).resolve().parent / "templates"
MAX_FORM_BYTES = 64 * 1024
# Longer than any claim id (32 characters in the store) or arXiv id (40): such a path names nothing,
# and is answered 404 before the store is asked.
MAX_ID_CHARS = 100
RETRY_AFTER_SECONDS = 30  # what a 503 asks a client to wait


class Refused(Exception):
    """A request the app will not serve: status code, a sentence for the reader, and any headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


class Unavailable(Exception):
    """The database did not answer within the request's time (a frozen server keeps connections open)."""


# What says the database cannot be used right now, rather than that a page has a bug: 503, not 500.
UNAVAILABLE: tuple[type[Exception], ...] = (Unavailable, OperationalError, InterfaceError, PoolTimeout)


def _environment() -> Environment:
    # autoescape on for every template: titles, abstracts and quotes are untrusted paper text.
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True))
    env.globals.update(arxiv_url=arxiv_url, statuses=STATUSES)
    env.filters["pct"] = lambda v: f"{100 * float(v):.0f}%"
    env.filters["judge"] = shown_judge
    return env


class WebApp:
    """The app's state: the store, settings, the token guard and templates."""

    def __init__(self, store: Store, settings: Settings, reports: Path) -> None:
        self.store = store
        self.settings = settings
        self.reports = reports
        token = settings.web.token.get_secret_value() if settings.web.token else None
        self.guard = Guard(token)  # refuses a weak token
        self.deadline = settings.web.request_timeout_seconds
        self.env = _environment()

    # --- who is asking ---------------------------------------------------------------------------

    @staticmethod
    def client(request: Request) -> str:
        """The client's address (the real one behind a trusted proxy: web.trusted_proxies)."""
        return request.client.host if request.client else "unknown"

    def curator(self, request: Request) -> str | None:
        """The reviewer's name when the request carries the curator token or a live sign-in, else None.
        Worked out once per request, so a wrong header token counts as one failed attempt."""
        if not hasattr(request.state, "curator"):
            request.state.curator = self._curator(request)
        name: str | None = request.state.curator
        return name

    def _curator(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            client = self.client(request)
            request.state.wait = self.guard.wait(client)
            if request.state.wait is None and self.guard.token_ok(header[7:].strip(), client):
                return clean_name(request.headers.get("x-reviewer", "")) or "token"
            return None
        return self.guard.signed_in(request.session.get("sign_in"))

    @staticmethod
    def csrf(request: Request) -> str:
        """The session's form token, made on its first page."""
        token = request.session.get("csrf")
        if not isinstance(token, str) or not token:
            token = request.session["csrf"] = new_form_token()
        return token

    async def form(self, request: Request, need_curator: bool = True) -> tuple[dict[str, str], str | None]:
        """The posted form once it passed the checks: the curator (where one is needed), then CSRF
        (unless the token came in a header). Returns the fields and the reviewer's name."""
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise Refused(413, "form too large")
        fields = {
            k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()
        }
        name = self.curator(request)
        if need_curator and name is None:
            wait = getattr(request.state, "wait", None)
            if wait is not None:
                raise Refused(429, wait.message(), {"Retry-After": str(wait.seconds)})
            raise Refused(403, "Read-only: sign in at /login with the curator token to record decisions.")
        by_header = request.headers.get("authorization", "").lower().startswith("bearer ")
        if not by_header and not _same(request.session.get("csrf"), fields.get("csrf", "")):
            raise Refused(
                403,
                "This form is out of date or did not come from this board (CSRF check failed): "
                "reload the page and submit it again.",
            )
        return fields, name

    async def in_time(self, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)` in a worker thread, answered within web.request_timeout_seconds. A database
        server that stops (SIGSTOP, a dead network) keeps its connections open and a query on one
        never returns; the visitor gets a 503 at the deadline and the thread is left to end on its own."""
        try:
            with anyio.fail_after(self.deadline):
                return await anyio.to_thread.run_sync(work, *args, abandon_on_cancel=True)
        except TimeoutError:
            raise Unavailable(f"no answer within {self.deadline:g} s") from None

    # --- rendering --------------------------------------------------------------------------------

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(
            csrf=self.csrf(request),
            curator=self.curator(request),
            writable=self.guard.token is not None,
            # where sign-in returns to; an over-long path (a 404) is not echoed into the page
            path=request.url.path if len(request.url.path) <= 2 * MAX_ID_CHARS else "/",
            title=self.settings.report.title,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def refused(
        self, request: Request, exc: Refused | MonitorError, status: int | None = None
    ) -> HTMLResponse:
        code = status or getattr(exc, "status", 400)
        response = self.render(request, "error.html.j2", status=code, message=str(exc))
        response.headers.update(getattr(exc, "headers", {}))
        return response

    def unavailable(self, request: Request, exc: Exception) -> Response:
        """503 with a one-line reason and Retry-After; one log line, no traceback (the cause is known)."""
        timed_out = isinstance(exc, Unavailable | PoolTimeout)
        orig = getattr(exc, "orig", None)
        detail = str(orig if orig is not None else exc).strip().splitlines()
        log.warning(
            "claim board: %s %s: database unavailable: %s",
            request.method,
            request.url.path,
            detail[0] if detail else type(exc).__name__,
        )
        why = f"it did not answer within {self.deadline:g} s" if timed_out else "it cannot be reached"
        message = f"The board's database is unavailable ({why}). Try again in a minute."
        response = self.render(request, "error.html.j2", status=503, message=message)
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response


def _same(expected: object, given: str) -> bool:
    """A form token matches the session's (compared in constant time, any text accepted)."""
    if not isinstance(expected, str) or not expected:
        return False
    return hmac.compare_digest(expected.encode(), (given or "").encode())


def _local(target: str, default: str) -> str:
    """Only a path on this site: a redirect never leaves it."""
    return target if target.startswith("/") and not target.startswith("//") else default


def _app(request: Request) -> WebApp:
    state: WebApp = request.app.state.web
    return state


Page = Callable[[Request], Response]


def bounded(page: Page) -> Callable[[Request], Awaitable[Response]]:
    """A page that reads the store, run in a worker thread within the request's time (WebApp.in_time)."""

    async def endpoint(request: Request) -> Response:
        return await _app(request).in_time(page, request)

    endpoint.__name__ = page.__name__
    endpoint.__doc__ = page.__doc__
    return endpoint


def too_long(app: WebApp, request: Request, value: str, what: str) -> Response | None:
    """404 for an id no claim or paper can have, before the store is asked (a 70 KB id once cost a
    500 from the database's pattern matcher)."""
    if len(value) <= MAX_ID_CHARS:
        return None
    return app.refused(request, Refused(404, f"no {what} has an id of {len(value):,} characters"))


def board(request: Request) -> Response:
    app = _app(request)
    q = request.query_params
    filters = pages.Filters(q.get("line", ""), q.get("verdict", ""), q.get("dated", ""), q.get("q", ""))
    data = pages.board(app.store, app.settings, filters)
    return app.render(request, "board.html.j2", board=data, filters=filters)


def claim(request: Request) -> Response:
    app = _app(request)
    claim_id = request.path_params["claim_id"]
    if refused := too_long(app, request, claim_id, "claim"):
        return refused
    number = request.query_params.get("page", "1")
    try:
        wanted = int(number) if number.isdigit() else 1  # evidence pages stay small (pages.CARDS_PER_PAGE)
        page = pages.claim_page(app.store, app.settings, claim_id, wanted)
    except MonitorError as exc:
        return app.refused(request, exc, 404)
    return app.render(request, "claim.html.j2", page=page, plot=layout(page.series))


def paper(request: Request) -> Response:
    app = _app(request)
    arxiv_id = request.path_params["arxiv_id"]
    if refused := too_long(app, request, arxiv_id, "paper"):
        return refused
    try:
        page = pages.paper_page(app.store, app.settings, arxiv_id)
    except MonitorError as exc:
        return app.refused(request, exc, 404)
    return app.render(request, "paper.html.j2", page=page)


def review(request: Request) -> Response:
    app = _app(request)
    page = pages.review_page(app.store, app.settings)
    return app.render(request, "review.html.j2", page=page, done=request.query_params.get("done", ""))


async def decide(request: Request) -> Response:
    app = _app(request)
    try:
        fields, name = await app.form(request)
        assessment_id = int(request.path_params["assessment_id"])
        done = await app.in_time(_record, app, assessment_id, fields, name or "")
    except (Refused, MonitorError) as exc:
        return app.refused(request, exc)
    moved = f"{done.from_label} -> {done.label or 'dismissed'}"
    message = f"{done.action} {done.claim_id} × {done.arxiv_id}: {moved}"
    target = _local(fields.get("next", ""), "/review")
    query = urlencode({"done": message})
    return RedirectResponse(f"{target}{'&' if '?' in target else '?'}{query}", status_code=303)


async def wording(request: Request) -> Response:
    app = _app(request)
    try:
        fields, _ = await app.form(request)
        rewording_id = int(request.path_params["rewording_id"])
        choice = {"accept": accept, "reject": reject}.get(fields.get("do", ""))
        if choice is None:
            raise Refused(400, "choose accept or reject")
        await app.in_time(choice, app.store, rewording_id, fields.get("note", ""))
    except (Refused, MonitorError) as exc:
        return app.refused(request, exc)
    return RedirectResponse("/review", status_code=303)


async def login(request: Request) -> Response:
    app = _app(request)
    if request.method == "GET":
        wanted = _local(request.query_params.get("next", ""), "/review")
        return app.render(request, "login.html.j2", failed=False, request_next=wanted)
    try:
        fields, _ = await app.form(request, need_curator=False)
    except Refused as exc:
        return app.refused(request, exc)
    client = app.client(request)
    if (wait := app.guard.wait(client)) is not None:
        # Even the right token is refused while a limit holds: guessing stays a few tries a minute.
        return app.refused(request, Refused(429, wait.message(), {"Retry-After": str(wait.seconds)}))
    name = clean_name(fields.get("name", ""))
    if not app.guard.token_ok(fields.get("token", ""), client) or not name:
        return app.render(request, "login.html.j2", status=403, failed=True)
    # A new session: whatever cookie came in (planted, or copied before sign-in) is worth nothing now.
    request.session.clear()
    request.session["sign_in"] = app.guard.sign_in(name)
    request.session["csrf"] = new_form_token()
    return RedirectResponse(_local(fields.get("next", ""), "/review"), status_code=303)


async def logout(request: Request) -> Response:
    app = _app(request)
    try:
        await app.form(request, need_curator=False)
    except Refused as exc:
        return app.refused(request, exc)
    app.guard.sign_out(request.session.get("sign_in"))  # a copy of the cookie dies here too
    request.session.clear()
    return RedirectResponse("/", status_code=303)


def digests(request: Request) -> Response:
    app = _app(request)
    return app.render(request, "digests.html.j2", digests=pages.digests(app.store))


def digest_file(request: Request) -> Response:
    """A digest by its period key (its HTML, else its Markdown), or one of its files by name (the
    feed's links)."""
    app = _app(request)
    key = request.path_params["key"]
    for row in pages.digests(app.store):
        if row["key"] == key:
            return _digest_file(app, request, row, ("html", "markdown"))
        for kind in ("html", "markdown"):
            if row[kind] and Path(str(row[kind])).name == key:
                return _digest_file(app, request, row, (kind,))
    return app.refused(request, Refused(404, "no such digest"))


def feed(request: Request) -> Response:
    """The Atom feed with links to this board's copies of the digests, and no file path in it."""
    app = _app(request)
    base = (app.settings.report.board_url or str(request.base_url)).rstrip("/") + "/"
    report = app.settings.report.model_copy(update={"public_url": base + "digests/"})
    xml = feed_xml(app.store, app.settings.model_copy(update={"report": report}), app.reports)
    return Response(_board_feed(xml, base), media_type="application/atom+xml")


def _board_feed(xml: bytes, base: str) -> bytes:
    """The feed as the board serves it: its own address as the feed's, and links only to files it
    serves. A digest whose file lies outside the reports folder gets a file:// link in the written
    feed; here it gets none, so no path on the server reaches a visitor."""
    ET.register_namespace("", ATOM)
    root = ET.fromstring(xml)  # the feed module's own output, not a visitor's
    link = f"{{{ATOM}}}link"
    for parent in (root, *root.iter(f"{{{ATOM}}}entry")):
        for element in parent.findall(link):
            if element.get("rel") == "self":
                element.set("href", base + "feed.xml")
            elif not element.get("href", "").startswith(base):
                parent.remove(element)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


ROUTES = [
    Route("/", bounded(board)),
    Route("/claims/{claim_id}", bounded(claim)),
    Route("/papers/{arxiv_id}", bounded(paper)),
    Route("/review", bounded(review)),
    Route("/review/{assessment_id:int}", decide, methods=["POST"]),
    Route("/wordings/{rewording_id:int}", wording, methods=["POST"]),
    Route("/login", login, methods=["GET", "POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/digests", bounded(digests)),
    Route("/digests/{key}", bounded(digest_file)),
    Route("/feed.xml", bounded(feed)),
]


def _record(app: WebApp, assessment_id: int, fields: dict[str, str], reviewer: str) -> Recorded:
    """One decision from the review form, written and verdicts refreshed as `monitor review set` does."""
    do = fields.get("do", "")
    note = fields.get("note", "")
    decisive = fields.get("decisive", "") in ("1", "on", "true")
    if do == "dismiss":
        done = record(app.store, assessment_id, dismiss=True, note=note, reviewer=reviewer)
    elif do == "note":
        done = record(app.store, assessment_id, note=note, reviewer=reviewer)
    else:
        done = record(app.store, assessment_id, label=do, note=note, decisive=decisive, reviewer=reviewer)
    if done.action != "note":
        refresh_verdicts(app.store, app.settings)
    log.info("review %s on assessment %s by %s", done.action, assessment_id, reviewer)
    return done


def _digest_file(app: WebApp, request: Request, row: dict[str, Any], kinds: tuple[str, ...]) -> Response:
    """The digest as written, the first of `kinds` it has; only files inside the reports folder are
    served, and a refusal names no path (the log does)."""
    root = app.reports.resolve()
    for kind in kinds:
        name = str(row[kind])
        if not name:
            continue
        path = Path(name)
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
        if path.is_relative_to(root) and path.is_file():
            text = path.read_text(encoding="utf-8")
            if kind == "html":
                return HTMLResponse(text, headers={"Content-Security-Policy": DIGEST_POLICY})
            return PlainTextResponse(text)
        log.info("digest %s: %s is not a file inside %s; not served", row["key"], path, root)
    return app.refused(request, Refused(404, f"digest {row['key']}: its file is not available here"))


SECURITY_HEADERS = {
    # No script runs on these pages but the app's own; no frame may embed them.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers that predate it
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
# A digest's own HTML carries its styles inline; it runs no script and is framed nowhere either.
DIGEST_POLICY = "script-src 'none'; frame-ancestors 'none'"


def _secure_cookies(response: Response) -> None:
    """Mark every cookie Secure: the request came over https (directly, or through a trusted proxy)."""
    cookies = response.headers.getlist("set-cookie")
    if not cookies:
        return
    del response.headers["set-cookie"]
    for cookie in cookies:
        flags = {part.strip().lower() for part in cookie.split(";")[1:]}
        response.headers.append("set-cookie", cookie if "secure" in flags else f"{cookie}; secure")


def create_app(store: Store, settings: Settings) -> Starlette:
    state = WebApp(store, settings, Path(settings.paths.reports))

    async def headers(request: Request, call_next: Any) -> Response:
        response = await call_next(request)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        if request.url.scheme == "https":
            _secure_cookies(response)
        return response

    async def unavailable(request: Request, exc: Exception) -> Response:
        return state.unavailable(request, exc)

    session = Middleware(
        SessionMiddleware,
        secret_key=secrets.token_urlsafe(32),  # made at start-up: a restart signs everyone out
        session_cookie=SESSION_COOKIE,
        max_age=SESSION_SECONDS,
        same_site="strict",
    )
    app = Starlette(
        routes=ROUTES,
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=headers), session],
        exception_handlers={kind: unavailable for kind in UNAVAILABLE},
    )
    app.state.web = state
    return app
