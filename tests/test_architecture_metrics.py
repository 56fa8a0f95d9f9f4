"""bench/architecture_metrics.py counts what its module doc says, on a small package written for it.

Each count is checked on a case it could get wrong: a callback the pair's way runs through, a file's
`write` that is no writer's, the pipeline above the start, a settings copy, a digest's tally that only
combines definitions of "pending", a server kind compared with "local".
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent

FILES = {
    "monitor/__init__.py": "",
    "monitor/config.py": """
        EMBEDDED = "embedded"
        EMBEDDED_JUDGE_STORED = "local"

        class LLMSettings:
            model: str

        class Settings:
            llm: LLMSettings
    """,
    "monitor/testhooks.py": """
        def pause_at(point: str) -> None:
            with open("marker", "a") as fh:
                fh.write(point)
    """,
    "monitor/store/__init__.py": "",
    "monitor/store/models.py": """
        class Candidate: ...
        class Assessment: ...
        class JudgeFailure: ...
    """,
    "monitor/store/candidates.py": """
        from monitor.store.models import Assessment, Candidate

        def add_candidates(session, rows) -> None:
            session.add_all([Candidate(**r) for r in rows])

        def pairs_to_judge(session) -> list:
            return session.query(Candidate)

        def count_unjudged(session) -> int:
            return session.query(Candidate).filter(~Assessment.exists()).count()
    """,
    "monitor/store/assessments.py": """
        from monitor.store.models import Assessment

        def judged_keys(session) -> set:
            return set(session.query(Assessment))

        def add_current(session, rows) -> None:
            session.add_all([Assessment(**r) for r in rows])
    """,
    "monitor/store/failures.py": """
        from monitor.store.models import JudgeFailure

        def count_parked(session) -> int:
            return session.query(JudgeFailure).count()
    """,
    "monitor/sources/__init__.py": "",
    "monitor/sources/ingest.py": "def fetch(store) -> None: ...\n",
    "monitor/relevance/__init__.py": "",
    "monitor/relevance/select.py": """
        from monitor.config import Settings
        from monitor.store.candidates import add_candidates
        from monitor.testhooks import pause_at

        def select_candidates(store, settings: Settings) -> None:
            pause_at("select")
            _write(store, [])

        def _write(session, rows) -> None:
            add_candidates(session, rows)
    """,
    "monitor/llm/__init__.py": "",
    "monitor/llm/units.py": "class WorkUnit: ...\n",
    "monitor/llm/workers.py": """
        def run_bounded(units, finish) -> None:
            for unit in units:
                finish(unit)
    """,
    "monitor/llm/engine.py": """
        from typing import Protocol

        from monitor.config import LLMSettings
        from monitor.llm.workers import run_bounded

        class Writer(Protocol):
            def write(self, unit) -> None: ...

        def run_live(units, writer: Writer, llm: LLMSettings | None = None) -> None:
            def finish(unit) -> None:
                writer.write(unit)

            run_bounded(units, finish)
    """,
    "monitor/judge/__init__.py": "",
    "monitor/judge/factory.py": """
        from monitor.config import Settings
        from monitor.llm.transport import make_transport

        def make_judge(settings: Settings):
            return make_transport(settings.llm)
    """,
    "monitor/llm/transport.py": """
        from monitor.config import LLMSettings

        def make_transport(llm: LLMSettings) -> str:
            return llm.model
    """,
    "monitor/judge/work.py": """
        from monitor.llm.units import WorkUnit
        from monitor.store.assessments import judged_keys
        from monitor.store.candidates import pairs_to_judge

        def pending_units(session) -> list[WorkUnit]:
            done = judged_keys(session)
            return [row for row in pairs_to_judge(session) if row not in done]
    """,
    "monitor/judge/writer.py": """
        from monitor.store.assessments import add_current

        class AssessmentWriter:
            def write(self, unit) -> None:
                add_current(None, [unit])
    """,
    "monitor/judge/runner.py": """
        from monitor.config import EMBEDDED, Settings
        from monitor.judge.factory import make_judge
        from monitor.judge.work import pending_units
        from monitor.judge.writer import AssessmentWriter
        from monitor.llm.engine import run_live

        def judge_pending(store, settings: Settings, name: str) -> None:
            judge = make_judge(settings)
            run_live(pending_units(store), AssessmentWriter(), llm=settings.llm)
            second = make_judge(settings)
            if name == EMBEDDED:
                return
    """,
    "monitor/verdicts/__init__.py": "",
    "monitor/verdicts/rollup.py": "def compute(store) -> None: ...\n",
    "monitor/report/__init__.py": "",
    "monitor/report/digest.py": """
        from monitor.store.candidates import count_unjudged
        from monitor.store.failures import count_parked

        def tally(session, settings) -> int:
            if settings.judge.provider == "local":
                return 0
            if settings.llm.kind == "local":  # a server's kind: no judge's name
                return 1
            return count_unjudged(session) - count_parked(session)

        def write_digest(store) -> None: ...
    """,
    "monitor/schedule/__init__.py": "",
    "monitor/schedule/pipeline.py": """
        from monitor.config import Settings
        from monitor.judge.runner import judge_pending
        from monitor.relevance.select import select_candidates
        from monitor.report.digest import write_digest
        from monitor.sources.ingest import fetch
        from monitor.verdicts.rollup import compute

        def judge_step(store, settings: Settings) -> None:
            budgeted = settings.model_copy()
            judge_pending(store, budgeted, "openai")

        def run_once(store, settings: Settings) -> None:
            _pipeline(store, settings)

        def _pipeline(store, settings: Settings) -> None:
            fetch(store)
            select_candidates(store, settings)
            judge_step(store, settings)
            compute(store)
            write_digest(store)
    """,
    "monitor/cli/__init__.py": "",
    "monitor/cli/operations.py": """
        from monitor.schedule.pipeline import run_once

        @app.command("run")
        def run_command() -> None:
            run_once(None, None)
    """,
    "tests/test_architecture.py": """
        LAYERS: dict[str, int] = {
            "__init__": 0, "config": 1, "testhooks": 0, "store": 2, "sources": 3, "llm": 3, "relevance": 4,
            "judge": 5, "verdicts": 6, "report": 8, "schedule": 10, "cli": 11,
        }
    """,
}


@pytest.fixture(scope="module")
def metrics() -> ModuleType:
    path = REPO / "bench" / "architecture_metrics.py"
    spec = importlib.util.spec_from_file_location("architecture_metrics", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def measured(metrics: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict:
    repo = tmp_path_factory.mktemp("house")
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return metrics.measure(repo)


def test_the_pairs_way_runs_through_the_callback_and_not_up_or_into_a_file(measured: dict) -> None:
    pair = measured["pair_modules"]
    assert sorted(pair["functions"]) == [
        "monitor.judge.runner", "monitor.judge.writer", "monitor.llm.engine", "monitor.llm.workers",
        "monitor.relevance.select", "monitor.store.assessments", "monitor.store.candidates",
    ]  # fmt: skip
    assert pair["modules"] == 7
    assert pair["functions"]["monitor.llm.engine"] == ["run_live", "run_live.<locals>.finish"]
    # The units come from judge/work.py and go back: a round trip, not on the way to the write.
    assert pair["round_trips"] == {"monitor.judge.work": ["pending_units"]}
    assert pair["with_round_trips"] == 8


def _counts(carried: dict) -> tuple[int, int, int, int]:
    return carried["modules_entered"], carried["entries"], carried["climbs"], carried["returns"]


def test_settings_are_followed_from_the_judge_step_through_a_copy(measured: dict) -> None:
    carried = measured["settings"]["from"]
    assert carried["list"] == [
        "monitor.schedule.pipeline:10 -> monitor.judge.runner",  # `budgeted`, a copy of the settings
        "monitor.judge.runner:8 -> monitor.judge.factory",
        "monitor.judge.runner:10 -> monitor.judge.factory (returns)",
    ]
    assert _counts(carried) == (2, 3, 0, 1)
    # With its sections: `settings.llm` goes down to llm/ twice, and the settings come back up in between.
    carried = measured["settings_or_a_section"]["from"]
    assert carried["list"] == [
        "monitor.schedule.pipeline:10 -> monitor.judge.runner",
        "monitor.judge.runner:8 -> monitor.judge.factory",
        "monitor.judge.factory:5 -> monitor.llm.transport",
        "monitor.judge.runner:9 -> monitor.llm.engine (climbs)",
        "monitor.judge.runner:10 -> monitor.judge.factory (climbs, returns)",
    ]
    assert _counts(carried) == (4, 5, 2, 1)
    # Who reads: make_judge and judge_pending (`settings.llm`), judge_step (its copy); run_once and
    # _pipeline only hand it on, and `tally`'s settings are not annotated, so not told to be a Settings.
    assert measured["settings"]["functions_reading"] == 3
    assert measured["settings_or_a_section"]["functions_reading"] == 4  # and make_transport (llm.model)


def test_the_week_is_the_function_where_the_stages_part(measured: dict) -> None:
    week = measured["week_function"]
    assert week["function"] == "monitor.schedule.pipeline._pipeline"
    assert week["path"] == ["run_command", "run_once", "_pipeline"]
    assert week["lines"] == 6


def test_pending_is_defined_where_candidates_lose_what_is_judged_and_not_in_a_tally(measured: dict) -> None:
    pending = measured["pending_definitions"]
    assert [line.split(":")[0] for line in pending["list"]] == [
        "monitor.judge.work.pending_units",
        "monitor.store.candidates.count_unjudged",
    ]


def test_only_judge_names_compared_with_the_embedded_names_count(measured: dict) -> None:
    names = measured["judge_name_comparisons"]
    assert names["names"] == ["embedded", "local"]
    assert names["list"] == [
        "monitor/judge/runner.py:11: name == EMBEDDED",
        "monitor/report/digest.py:5: settings.judge.provider == 'local'",
    ]
    assert (names["count"], names["files"]) == (2, 2)
