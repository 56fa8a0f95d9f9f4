"""Judging commands: relevance, judge, eval."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from monitor.cli.context import JUDGE_HELP, console, ctx_of, err_console, judge_choice, judge_or_old_name
from monitor.progress import progress_wanted
from monitor.terminal import print_table

app = typer.Typer()


@app.command("relevance")
def relevance_command(
    ctx: typer.Context,
    claim: Annotated[
        list[str] | None, typer.Option("--claim", help="Only this claim id (repeatable).", show_default=False)
    ] = None,
) -> None:
    """Pick the (paper, claim) pairs worth judging among papers each claim has not been scanned against."""
    from contextlib import nullcontext

    from monitor.claims.listing import check_claim_ids
    from monitor.relevance import select_candidates
    from monitor.schedule.lock import run_lock
    from monitor.store.runs import recorded_run

    app_ctx = ctx_of(ctx)
    store, settings = app_ctx.store, app_ctx.settings
    check_claim_ids(store, claim)
    # The LLM screen pays for its calls: under the run lock, like `monitor judge`.
    locked = run_lock(store, settings) if settings.relevance_in_force().screen == "llm" else nullcontext()
    with locked, recorded_run(store, "relevance") as run:
        summary = select_candidates(store, settings, run.id, run.should_stop, claim_ids=claim or None)
        run.record(summary)
    console.print(
        f"relevance ({summary.method}): {summary.papers_scanned} paper version(s) scanned against "
        f"{summary.claims} claim(s), [bold]{summary.candidates_added}[/] new candidate(s), "
        f"{summary.seconds:.1f} s",
        highlight=False,
    )


@app.command("judge")
def judge_command(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Judge again even what is cached (kept as history).")
    ] = False,
    claim: Annotated[
        list[str] | None, typer.Option("--claim", help="Only this claim id (repeatable).", show_default=False)
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count the calls and tokens a run would take; call nothing.")
    ] = False,
    judge: Annotated[str | None, typer.Option("--judge", help=JUDGE_HELP, callback=judge_choice)] = None,
    provider: Annotated[str | None, typer.Option("--provider", hidden=True)] = None,  # the old --judge
    batch: Annotated[
        bool, typer.Option("--batch", help="OpenAI Batch API: collect finished batches, submit the rest.")
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="With --batch: poll until submitted batches finish.")
    ] = False,
    skip_relevance: Annotated[
        bool,
        typer.Option(
            "--skip-relevance",
            help="Judge the candidates already picked; do not sync claims or run relevance.",
        ),
    ] = False,
    alternatives: Annotated[
        bool,
        typer.Option(
            "--alternatives",
            help="With --dry-run: price each relevance setting over the last week's papers even when "
            "nothing is pending (shown anyway when pairs are pending).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Sync claims, pick candidate (paper, claim) pairs, judge the pending ones and store assessments.

    SIGTERM/SIGINT stop starting calls: what finished is kept, the run ends `interrupted`, exit 130.
    A spent token budget exits 7 and a judge that answered nothing 6, as `monitor run` does; with
    --batch too, by what it collected and the second looks it asked (batches still running: exit 0).
    It takes the run lock (not with --dry-run): while another run holds it, exit 75.
    """
    from monitor.schedule.judging import JudgeRequest, judge_once
    from monitor.schedule.signals import StopFlag, graceful_stop

    if alternatives and not dry_run:
        from monitor.errors import UsageError

        raise UsageError("--alternatives prices relevance settings for a dry run: use it with --dry-run")
    app_ctx = ctx_of(ctx)
    request = JudgeRequest(
        force=force,
        claim_ids=claim,
        dry_run=dry_run,
        provider=judge_or_old_name(judge, provider),
        batch=batch,
        wait=wait,
        relevance=not skip_relevance,
        progress=progress_wanted(),
        alternatives=True if alternatives else None,
    )
    shown: dict[str, Any] = {}
    show = _collect(shown) if as_json else _printer()
    try:
        with graceful_stop(StopFlag(again="monitor judge")) as flag:
            judge_once(app_ctx.store, app_ctx.settings, request, flag, show)
    finally:  # a judge that stopped (exit 6, 7, 130) still says, in JSON, what it did
        if as_json and shown:
            typer.echo(json.dumps(shown, indent=2, ensure_ascii=False, default=str))


def _collect(shown: dict[str, Any]) -> Any:
    """A `Show` that keeps each step's result as JSON under its name, for `--json`."""

    def show(step: str, result: Any) -> None:
        if step == "alternatives":
            shown[step] = [row.as_dict() for row in result]
        elif step == "nothing pending":
            shown["nothing_pending"] = True
        elif step == "screen estimate":
            shown["screen_estimate"] = result
        elif step == "screen":  # the LLM screen of the pairs relevance picked: shown as part of it
            shown.setdefault("relevance", {})["screen"] = result.as_dict()
        else:  # relevance, judge, batches
            shown[step] = result.as_dict()

    return show


def _second_readings(again: dict[str, Any] | None) -> str:
    """The screen estimate's part for second readings (relevance.screen_recheck), if any."""
    if not again or not again["calls"]:
        return ""
    return f" (of it ~{again['calls']:,} call(s), ${again['cost_estimate']:.2f}, for second readings)"


def _printer() -> Any:
    """A `Show` that prints each step (`_show`), but no dry-run table of zeros when nothing at all is
    pending: "nothing pending" then says what to do instead. Pairs waiting for the LLM screen or for a
    second look are pending too: the judge's table is printed (under the screen's estimate)."""
    screening = False

    def show(step: str, result: Any) -> None:
        nonlocal screening
        if step == "screen estimate":
            screening = bool(result["pairs"])
        waiting = step == "judge" and result.second_looks_waiting and result.second_looks_waiting.looks
        if step == "judge" and result.dry_run and not result.pending and not screening and not waiting:
            return
        _show(step, result)

    return show


def _show(step: str, result: Any) -> None:
    """Print each judging step's result as `judge_once` reports it."""
    if step == "relevance":
        console.print(
            f"relevance: {result.candidates_added} new candidate pair(s) "
            f"from {result.papers_scanned} paper version(s)"
        )
    elif step == "screen":
        again = f" ({result.recovered} of them by a second reading)" if result.recovered else ""
        console.print(
            f"relevance screen: {result.kept} kept{again}, {result.dropped} dropped, "
            f"{result.pending_left} pending, {result.calls} call(s)"
        )
    elif step == "screen estimate":
        console.print(
            f"relevance screen (estimate): {result['calls']} call(s) for {result['pairs']} pending pair(s) "
            f"of {result['papers']} paper(s), ~{result['prompt_tokens']:,} prompt tokens "
            f"(~{result['cached_tokens']:,} of them cached) + ~{result['completion_tokens']:,} completion "
            f"tokens, ${result['cost_estimate']:.2f}{_second_readings(result.get('recheck'))}",
            highlight=False,
            soft_wrap=True,
        )
        after = result.get("after_screen")
        if after:
            basis = "this store's" if after["measured"] else "the shipped"
            # Under --batch the first readings are at Batch API rates, the second looks too unless
            # judge.second_look_batch is off.
            rates = " (Batch API)" if after["batch"] else ""
            looked = "Batch API" if after["second_look_batch"] else "live"
            console.print(
                f"then judging what it keeps (estimate, at {basis} keep share {after['keep_share']:.1%}): "
                f"~{after['pairs']:,} pair(s) ${after['judge_cost']:.2f}{rates}, ~{after['second_looks']:,} "
                f"second look(s) ${after['second_look_cost']:.2f} ({looked}), ${after['cost']:.2f} in all; "
                "the judge estimate below covers only pairs already kept",
                highlight=False,
                soft_wrap=True,
            )
    elif step == "alternatives":
        _print_alternatives(result)
    elif step == "nothing pending":
        _print_nothing_pending(result.as_dict())
    elif step == "batches":
        _print_judge_summary(result.as_dict())
        running = result.batches_waiting + (result.second_look.batches_waiting if result.second_look else 0)
        if running:  # no failure (exit 0): said in words, not only as a count
            console.print(
                f"{running} batch(es) still running at the Batch API: `monitor judge "
                "--batch` collects them once they are done (`--wait` polls until then)",
                highlight=False,
            )
    else:  # judge
        _print_judge_summary(result.as_dict())


def _print_nothing_pending(data: dict[str, Any]) -> None:
    """A dry run with nothing to price: say so, and how to get the price the reader came for."""
    from monitor.judge_names import triage_only_judge

    judge = str(data["judge"])
    below = (
        f" ({data['below_cut']:,} below its triage cut, which an LLM judge reads)"
        if data["below_cut"]
        else ""
    )
    week = "`monitor judge --dry-run --alternatives` prices a week of new papers under each relevance setting"
    if triage_only_judge(judge):
        advice = (
            "The embedded judge calls nothing and costs nothing. What an LLM judge would cost: "
            "`monitor judge --dry-run --judge openai` prices every stored pair it has not judged, and "
            f"{week}."
        )
    else:
        advice = f"{week}; new papers (`monitor fetch`) give the judge work again."
    console.print(
        f"Nothing pending for the {judge} judge{below}: `monitor judge` would call nothing now. {advice}",
        highlight=False,
    )


def _print_alternatives(rows: list[Any]) -> None:
    from rich.table import Table

    title = "relevance settings over the last week's papers (estimate; nothing called)"
    table = Table(title=title)
    for column in ("setting", "pairs", "calls", "prompt tokens", "completion tokens", "USD"):
        table.add_column(column, justify="left" if column == "setting" else "right")
    for row in rows:
        name = row.label + (" (in force)" if row.in_force else "")
        name += " (screen calls only)" if row.screen else ""
        table.add_row(
            name, f"{row.pairs:,}", f"{row.calls:,}", f"{row.prompt_tokens:,}",
            f"{row.completion_tokens:,}", f"{row.cost:.2f}",
        )  # fmt: skip
    print_table(console, table)


def _print_judge_summary(data: dict[str, object]) -> None:
    from rich.table import Table

    title = "judge dry run (estimate)" if data.get("dry_run") else "judge"
    console.print(
        f"{title}: {data['judge']} {data['model']} prompt {data['prompt_version']}", highlight=False
    )
    table = Table()
    table.add_column("what")
    table.add_column("count", justify="right")
    labels = data.get("labels") or {}
    rows: list[tuple[str, object]] = [("pending pairs", data["pending"]), ("papers", data["papers"])]
    if data.get("triage_cut") is not None:
        # Not pending: the embedded judge reads each claim's top candidates a week; an LLM judge reads all.
        cut = f"below the embedded triage cut ({data['triage_cut']} a claim a week; an LLM judge reads them)"
        rows += [(cut, data["below_cut"])]
    if not data.get("dry_run"):
        rows += [("judged", data["judged"])] + [(f"  {k}", v) for k, v in labels.items()]  # type: ignore[union-attr]
        rows += [("ungrounded", data["ungrounded"]), ("errors", data["errors"])]
        rows += [("skipped (done meanwhile)", data.get("skipped", 0))]
        rows += [(_left(data), data["not_attempted"])]
    rows += [
        ("LLM calls", data["calls"]),
        ("prompt tokens", data["prompt_tokens"]),
        ("completion tokens", data["completion_tokens"]),
    ]
    cost = "cost estimate (USD)"
    looks: Any = data.get("second_look_estimate")
    if looks is not None:  # a dry run's: the calls and tokens above are the first readings'
        # By batch under --batch (unless judge.second_look_batch is off), else live.
        rows += [(f"second looks (expected, {_how(looks)})", _looks_shown(looks))]
        cost = "cost estimate (USD, with second looks)"
    waiting: Any = data.get("second_looks_waiting")
    if waiting and waiting["looks"]:  # left by an earlier run: a run asks them too
        rows += [(f"second looks (waiting, {_how(waiting)})", _looks_shown(waiting))]
    rows += [(cost, f"{float(data['cost_estimate']):.4f}")]  # type: ignore[arg-type]
    if data.get("batches_submitted") or data.get("batches_waiting") or data.get("batches_collected"):
        rows += [("batches submitted", data["batches_submitted"])]
        rows += [("batches collected", data["batches_collected"])]
        rows += [("batches running", data["batches_waiting"])]
    second: Any = data.get("second_look")
    if second and (
        second.get("batches_submitted") or second.get("batches_waiting") or second.get("batches_collected")
    ):
        rows += [("second-look batches submitted", second["batches_submitted"])]
        rows += [("second-look batches collected", second["batches_collected"])]
        rows += [("second-look batches running", second["batches_waiting"])]
    for name, value in rows:
        table.add_row(name, str(value))
    print_table(console, table)
    # The errors themselves were logged as they happened (judge/writer.py): stderr has each cause once.
    if data.get("dry_run") and data.get("budget_exhausted"):
        err_console.print("[yellow]warning:[/] this run would exceed llm.token_budget", highlight=False)


def _how(looks: dict[str, Any]) -> str:
    return "Batch API" if looks.get("batch") else "live"


def _looks_shown(looks: dict[str, Any]) -> str:
    """Second looks as the table prints them: pairs, the calls they share (a paper's in one), tokens, USD."""
    tokens = looks["prompt_tokens"] + looks["completion_tokens"]
    return f"{looks['looks']} pairs, {looks['calls']} calls, ~{tokens:,} tokens, ${looks['cost']:.4f}"


def _left(data: dict[str, object]) -> str:
    """The row of pending pairs not asked, named for the run's own reason (never a guess)."""
    if not data["not_attempted"]:
        return "left pending"
    if data.get("budget_exhausted"):
        return "left pending (token budget spent)"
    if data.get("judge_unavailable"):
        return "left pending (judge unavailable: see the error)"
    return "left pending (run stopped)"


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    pairs: Annotated[
        str, typer.Option("--pairs", help="Labelled pairs file (JSON lines: claim, title, abstract, label).")
    ],
    judge_name: Annotated[str | None, typer.Option("--judge", help=JUDGE_HELP, callback=judge_choice)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N pairs.")] = None,
    predictions: Annotated[
        str | None,
        typer.Option("--predictions", help="Also write each pair with the judge's answer (JSON lines)."),
    ] = None,
) -> None:
    """Score a judge on labelled pairs: macro-F1, per-class precision / recall / F1, confusion matrix."""
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from monitor.judge.evaluate import evaluate, print_report, read_pairs
    from monitor.judge.factory import make_judge
    from monitor.judge.second_look import second_reading

    pair_list = read_pairs(Path(pairs), limit=limit)
    judge = make_judge(ctx_of(ctx).settings, judge_name)
    columns = (TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("judging", total=len(pair_list))
        second = second_reading(ctx_of(ctx).settings, judge)  # as the pipeline reads (judge.second_look)
        report = evaluate(judge, pair_list, pairs, lambda n: bar.update(task, completed=n), second)
    if predictions:
        from monitor.files import write_atomic

        lines = (json.dumps(p.as_record(), ensure_ascii=False) for p in report.predictions)
        write_atomic(Path(predictions), "".join(line + "\n" for line in lines))
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))  # plain JSON: meant for other programs
    else:
        print_report(console, report)
