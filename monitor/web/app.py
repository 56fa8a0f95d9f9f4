"""The claim board's routes (Starlette): pages that read, forms that write through the review stage.

Every decision goes through `monitor.review.queue.record` and verdicts are refreshed as
`monitor review set` refreshes them, so a browser decision is the same row a terminal one is.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from monitor.config import Settings, shown_judge
from monitor.errors import MonitorError
from monitor.report.feed import feed_xml
from monitor.review.queue import Recorded, record
from monitor.review.rewording import accept, reject
from monitor.review.session import refresh_verdicts
from monitor.sources.base import arxiv_url
from monitor.store.db import Store
from monitor.verdicts.rules import STATUSES
from monitor.web import pages
from monitor.web.plot import layout
from monitor.web.security import CURATOR_COOKIE, SESSION_COOKIE, Keys, clean_name, new_session_id

log = logging.getLogger(__name__)
TEMPLATES = Path(__file__).resolve().parent / "templates"
MAX_FORM_BYTES = 64 * 1024


class Refused(Exception):
    """A request the app will not serve: status code and a sentence for the reader."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _environment() -> Environment:
    # autoescape on for every template: titles, abstracts and quotes are untrusted paper text.
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True))
    env.globals.update(arxiv_url=arxiv_url, statuses=STATUSES)
    env.filters["pct"] = lambda v: f"{100 * float(v):.0f}%"
    env.filters["judge"] = shown_judge
    return env


class WebApp:
    """The app's state: the store, settings, signing keys and templates."""

    def __init__(self, store: Store, settings: Settings, reports: Path) -> None:
        self.store = store
        self.settings = settings
        self.reports = reports
        token = settings.web.token.get_secret_value() if settings.web.token else None
        self.keys = Keys.new(token)
        self.env = _environment()

    # --- who is asking ---------------------------------------------------------------------------

    def session_id(self, request: Request) -> tuple[str, bool]:
        given = request.cookies.get(SESSION_COOKIE, "")
        return (given, False) if 16 <= len(given) <= 64 else (new_session_id(), True)

    def curator(self, request: Request) -> str | None:
        """The reviewer's name when the request carries the curator token, else None."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            if self.keys.token_ok(header[7:].strip()):
                return clean_name(request.headers.get("x-reviewer", "")) or "token"
            return None
        sid, _ = self.session_id(request)
        return self.keys.curator_name(sid, request.cookies.get(CURATOR_COOKIE, ""))

    async def form(self, request: Request, need_curator: bool = True) -> tuple[dict[str, str], str | None]:
        """The posted form once it passed the checks: CSRF (unless the token came in a header), then
        the curator token. Returns the fields and the reviewer's name."""
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise Refused(413, "form too large")
        fields = {
            k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()
        }
        by_header = request.headers.get("authorization", "").lower().startswith("bearer ")
        sid, _ = self.session_id(request)
        if not by_header and not self.keys.csrf_ok(sid, fields.get("csrf", "")):
            raise Refused(403, "This form did not come from this page (CSRF check failed): reload and retry.")
        name = self.curator(request)
        if need_curator and name is None:
            raise Refused(403, "Read-only: sign in with the curator token to record decisions.")
        return fields, name

    # --- rendering --------------------------------------------------------------------------------

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        sid, fresh = self.session_id(request)
        html = self.env.get_template(template).render(
            csrf=self.keys.csrf(sid),
            curator=self.curator(request),
            writable=self.keys.token is not None,
            path=request.url.path,
            title=self.settings.report.title,
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        if fresh:
            response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="strict")
        return response

    def refused(
        self, request: Request, exc: Refused | MonitorError, status: int | None = None
    ) -> HTMLResponse:
        code = status or getattr(exc, "status", 400)
        return self.render(request, "error.html.j2", status=code, message=str(exc))


def _local(target: str, default: str) -> str:
    """Only a path on this site: a redirect never leaves it."""
    return target if target.startswith("/") and not target.startswith("//") else default


def _app(request: Request) -> WebApp:
    state: WebApp = request.app.state.web
    return state


def board(request: Request) -> Response:
    app = _app(request)
    q = request.query_params
    filters = pages.Filters(q.get("line", ""), q.get("verdict", ""), q.get("dated", ""), q.get("q", ""))
    data = pages.board(app.store, app.settings, filters)
    return app.render(request, "board.html.j2", board=data, filters=filters)


def claim(request: Request) -> Response:
    app = _app(request)
    number = request.query_params.get("page", "1")
    try:
        wanted = int(number) if number.isdigit() else 1  # evidence pages stay small (pages.CARDS_PER_PAGE)
        page = pages.claim_page(app.store, app.settings, request.path_params["claim_id"], wanted)
    except MonitorError as exc:
        return app.refused(request, exc, 404)
    return app.render(request, "claim.html.j2", page=page, plot=layout(page.series))


def paper(request: Request) -> Response:
    app = _app(request)
    try:
        page = pages.paper_page(app.store, app.settings, request.path_params["arxiv_id"])
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
        done = await run_in_threadpool(_record, app, assessment_id, fields, name or "")
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
        await run_in_threadpool(choice, app.store, rewording_id, fields.get("note", ""))
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
    name = clean_name(fields.get("name", ""))
    if not app.keys.token_ok(fields.get("token", "")) or not name:
        return app.render(request, "login.html.j2", status=403, failed=True)
    sid, _ = app.session_id(request)
    response = RedirectResponse(_local(fields.get("next", ""), "/review"), status_code=303)
    response.set_cookie(CURATOR_COOKIE, app.keys.curator_cookie(sid, name), httponly=True, samesite="strict")
    return response


async def logout(request: Request) -> Response:
    app = _app(request)
    try:
        await app.form(request, need_curator=False)
    except Refused as exc:
        return app.refused(request, exc)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(CURATOR_COOKIE)
    return response


def digests(request: Request) -> Response:
    app = _app(request)
    return app.render(request, "digests.html.j2", digests=pages.digests(app.store))


def digest_file(request: Request) -> Response:
    app = _app(request)
    for row in pages.digests(app.store):
        if row["key"] == request.path_params["key"]:
            return _digest_file(app, request, row)
    return app.refused(request, Refused(404, "no such digest"))


def feed(request: Request) -> Response:
    app = _app(request)
    return Response(feed_xml(app.store, app.settings, app.reports), media_type="application/atom+xml")


ROUTES = [
    Route("/", board),
    Route("/claims/{claim_id}", claim),
    Route("/papers/{arxiv_id}", paper),
    Route("/review", review),
    Route("/review/{assessment_id:int}", decide, methods=["POST"]),
    Route("/wordings/{rewording_id:int}", wording, methods=["POST"]),
    Route("/login", login, methods=["GET", "POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/digests", digests),
    Route("/digests/{key}", digest_file),
    Route("/feed.xml", feed),
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


def _digest_file(app: WebApp, request: Request, row: dict[str, Any]) -> Response:
    """The digest as written: its HTML if there is one, else its Markdown as plain text; only files
    inside the reports folder are served."""
    root = app.reports.resolve()
    for kind in ("html", "markdown"):
        name = str(row[kind])
        if not name:
            continue
        path = Path(name)
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
        if path.is_relative_to(root) and path.is_file():
            text = path.read_text(encoding="utf-8")
            if kind == "html":
                return HTMLResponse(text, headers={"Content-Security-Policy": "script-src 'none'"})
            return PlainTextResponse(text)
    return app.refused(request, Refused(404, f"digest {row['key']}: its file is not in {app.reports}"))


SECURITY_HEADERS = {
    # No script runs on these pages but the app's own; no frame may embed them.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def create_app(store: Store, settings: Settings) -> Starlette:
    state = WebApp(store, settings, Path(settings.paths.reports))

    async def headers(request: Request, call_next: Any) -> Response:
        response = await call_next(request)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    app = Starlette(routes=ROUTES, middleware=[Middleware(BaseHTTPMiddleware, dispatch=headers)])
    app.state.web = state
    return app
