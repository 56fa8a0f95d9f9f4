"""Settings from `monitor.toml` and `MONITOR_*` variables: every mistake is one line, exit 2, naming where."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ops_helpers import bare_monitor

from monitor.config import LLM_JUDGE_RELEVANCE, OTHER_VARIABLES, Settings, load_settings
from monitor.errors import ConfigError


def monitor(*args: str, cwd: Path, **env_extra: str) -> subprocess.CompletedProcess[str]:
    """`monitor <args>` with only the MONITOR_* variables the test names (no test-only floor either)."""
    return bare_monitor(*args, cwd=cwd, **env_extra)


def assert_config_error(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    for text in expected:
        assert text in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("MONITOR_JUGDE__MODEL", "gpt-4o", "unknown section 'jugde'"),
        ("MONITOR_JUDGE__MODLE", "gpt-4o", "unknown key judge.modle"),
        ("monitor_jugde__model", "gpt-4o", "unknown section 'jugde'"),  # read case-insensitively
        ("MONITOR_SCHEDULES__SOURCE", "rss", "unknown section 'schedules'"),
        ("MONITOR_JUDGE", "gpt-4o", "must be a JSON object"),
        ("MONITOR_ARXIV__CATEGORIES", "cs.AI", "not valid JSON"),  # was a traceback, exit 1
    ],
)
def test_unknown_or_undecodable_environment_variables_are_config_errors(
    tmp_path: Path, variable: str, value: str, expected: str
) -> None:
    done = monitor("runs", cwd=tmp_path, **{variable: value})
    assert_config_error(done, f"environment variable {variable}", expected)
    assert not (tmp_path / "monitor.db").exists()


def test_known_variables_still_apply(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in OTHER_VARIABLES - {"MONITOR_CONFIG"}:  # read elsewhere; not settings, not errors
        monkeypatch.setenv(name, os.environ.get(name, "0"))
    monkeypatch.setenv("MONITOR_JUDGE__MODEL", "my-model")
    monkeypatch.setenv("MONITOR_VERDICTS__PRECISION", '{"local": {"SUPPORTS": 0.5}}')
    monkeypatch.setenv("MONITOR_EMAIL", '{"port": 2525}')
    settings = load_settings()
    assert settings.llm.model == "my-model"  # judge.model moved to llm.model; the old name still loads
    assert settings.verdicts.precision == {"local": {"SUPPORTS": 0.5}}
    assert settings.email.port == 2525


def test_settings_given_in_code_win_then_the_environment_then_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A library caller's keyword argument is the last word (it lost to MONITOR_* variables before);
    a MONITOR_* variable still overrides the config file, key by key within a section."""
    config = tmp_path / "monitor.toml"
    config.write_text('[llm]\nmodel = "from-file"\ntimeout_seconds = 50\n\n[email]\nport = 2500\n')
    monkeypatch.setenv("MONITOR_LLM__MODEL", "from-env")
    monkeypatch.setenv("MONITOR_EMAIL__PORT", "2600")
    loaded = load_settings(config)
    assert (loaded.llm.model, loaded.llm.timeout_seconds, loaded.email.port) == ("from-env", 50, 2600)
    given = Settings(llm={"model": "from-code"}, email={"port": 2700})
    assert (given.llm.model, given.email.port) == ("from-code", 2700)
    assert Settings().llm.model == "from-env"  # what the code leaves alone still comes from the environment
    assert load_settings(config).llm.model == "from-env"  # and the file's values stay with that load


def test_a_bad_environment_value_names_its_variable_not_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "monitor.toml"
    config.write_text('[judge]\nmodel = "m"\n')
    done = monitor("--config", str(config), "runs", cwd=tmp_path, MONITOR_JUDGE__CONCURRENCY="four")
    assert_config_error(done, "judge.concurrency", "from environment variable MONITOR_JUDGE__CONCURRENCY")


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[judge]\nconcurrency = "four"\n', "judge.concurrency"),
        ("[judge]\nmodel = 4\n", "judge.model"),
        ('[arxiv]\ncategories = "cs.AI"\n', "arxiv.categories"),
        ('[report]\nemail = "yes please"\n', "report.email"),
        ("[schedule]\nlock_wait_seconds = 1.5\n", "schedule.lock_wait_seconds"),
        ('judge = "openai"\n', "judge"),  # a value where a section belongs
    ],
)
def test_wrong_types_in_the_config_file_name_file_and_key(tmp_path: Path, toml: str, key: str) -> None:
    config = tmp_path / "monitor.toml"
    config.write_text(toml)
    done = monitor("--config", str(config), "runs", cwd=tmp_path)
    assert_config_error(done, f"{config}: invalid configuration: {key}: ")


@pytest.mark.parametrize(
    ("toml", "key", "bound"),
    [
        ("[judge]\ntimeout_seconds = -5\n", "judge.timeout_seconds", "greater than 0"),
        ("[judge]\nconcurrency = -3\n", "judge.concurrency", "greater than or equal to 1"),
        ("[judge]\nclaims_per_call = 0\n", "judge.claims_per_call", "greater than or equal to 1"),
        ("[judge]\ntoken_budget = 0\n", "judge.token_budget", "greater than or equal to 1"),
        ("[email]\nport = 99999\n", "email.port", "less than or equal to 65535"),
        ("[email]\nmax_retries = -1\n", "email.max_retries", "greater than or equal to 0"),
        ("[arxiv]\npage_size = 0\n", "arxiv.page_size", "greater than or equal to 1"),
        ("[database]\nbusy_timeout_seconds = 0\n", "database.busy_timeout_seconds", "greater than 0"),
        ("[schedule]\nlock_heartbeat_seconds = 0\n", "schedule.lock_heartbeat_seconds", "greater than or"),
    ],
)
def test_numbers_out_of_range_name_file_key_and_bound(
    tmp_path: Path, toml: str, key: str, bound: str
) -> None:
    config = tmp_path / "monitor.toml"
    config.write_text(toml)
    done = monitor("--config", str(config), "runs", cwd=tmp_path)
    assert_config_error(done, f"{config}: invalid configuration: {key}: Input should be {bound}")
    assert not (tmp_path / "monitor.db").exists()


def test_a_number_out_of_range_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    done = monitor("runs", cwd=tmp_path, MONITOR_EMAIL__PORT="99999")
    expected = "email.port: Input should be less than or equal to 65535"
    assert_config_error(done, expected, "from environment variable MONITOR_EMAIL__PORT")


def test_arxiv_delay_below_three_seconds_is_refused_unless_the_test_floor_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "monitor.toml"
    config.write_text("[arxiv]\ndelay_seconds = 1.0\n")
    done = monitor("--config", str(config), "runs", cwd=tmp_path)
    assert_config_error(done, f"{config}", "arxiv.delay_seconds", "at least 3.0 seconds")
    monkeypatch.delenv("MONITOR_ARXIV_MIN_DELAY", raising=False)  # tests/conftest.py sets it
    assert Settings().arxiv.delay_seconds == 3.0
    assert Settings(arxiv={"delay_seconds": 3.0}).arxiv.delay_seconds == 3.0
    with pytest.raises(ConfigError, match=r"arxiv\.delay_seconds: .*at least 3\.0 seconds"):
        load_settings(config)
    monkeypatch.setenv("MONITOR_ARXIV_MIN_DELAY", "0")  # the test-only variable lowers the floor
    assert load_settings(config).arxiv.delay_seconds == 1.0


def test_relevance_cut_follows_the_judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "MONITOR_JUDGE__BASE_URL",
        "MONITOR_RELEVANCE__SHARE",
        "MONITOR_JUDGE__PROVIDER",
        "MONITOR_RELEVANCE__SCREEN",
    ):
        monkeypatch.delenv(name, raising=False)
    # The embedded judge keeps the 2% budget and no screen; an LLM judge screens every claim (issue 30).
    assert load_settings().relevance_in_force().share == 0.02
    assert load_settings().relevance_in_force().screen == "none"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    screened = load_settings()
    assert screened.judge_provider() == "openai"
    assert screened.relevance_in_force().screen == "llm" and screened.relevance_in_force().screen_share == 1.0
    # Without the screen, an LLM judge gets the wider measured lexical cut.
    monkeypatch.setenv("MONITOR_RELEVANCE__SCREEN", "none")
    llm = load_settings()
    assert llm.relevance_in_force().share == LLM_JUDGE_RELEVANCE["share"] == 0.10
    assert llm.relevance_in_force().method == "bm25"  # as good as the hybrid at 10%, no embedding model
    assert llm.relevance.share == 0.02  # the raw setting is untouched; only what is in force differs
    # An explicit share wins, whether from the file, the environment or code.
    (tmp_path / "monitor.toml").write_text("[relevance]\nshare = 0.02\n")
    assert load_settings().relevance_in_force().share == 0.02
    (tmp_path / "monitor.toml").unlink()
    monkeypatch.setenv("MONITOR_RELEVANCE__SHARE", "0.05")
    assert load_settings().relevance_in_force().share == 0.05
    monkeypatch.delenv("MONITOR_RELEVANCE__SHARE")
    coded = load_settings()
    coded.relevance.share = 0.03
    assert coded.relevance_in_force().share == 0.03
    # A screen asked for keeps its own first cut; a judge forced local keeps 2% even with a base URL.
    monkeypatch.setenv("MONITOR_RELEVANCE__SCREEN", "llm")
    assert load_settings().relevance_in_force() == load_settings().relevance
    monkeypatch.delenv("MONITOR_RELEVANCE__SCREEN")
    monkeypatch.setenv("MONITOR_JUDGE__PROVIDER", "local")
    assert load_settings().relevance_in_force().share == 0.02


def test_old_judge_keys_of_the_llm_section_still_load_with_a_notice_naming_the_new_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MONITOR_LLM__MODEL", "MONITOR_JUDGE__PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "monitor.toml"
    path.write_text(
        '[judge]\nbase_url = "http://127.0.0.1:9/v1"\nconcurrency = 2\nclaims_per_call = 3\n'
        "[llm]\ntimeout_seconds = 7\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("MONITOR_JUDGE__MODEL", "old-spelling")
    with caplog.at_level("WARNING", logger="monitor.config"):
        settings = load_settings(path)
    assert (settings.llm.base_url, settings.llm.concurrency, settings.llm.model) == (
        "http://127.0.0.1:9/v1",
        2,
        "old-spelling",
    )
    assert settings.llm.timeout_seconds == 7 and settings.judge.claims_per_call == 3
    assert settings.llm_configured() and settings.judge_provider() == "openai"
    notices = [r.getMessage() for r in caplog.records]
    assert f"{path}: judge.base_url is now llm.base_url (the old name still loads)" in notices
    assert f"{path}: judge.concurrency is now llm.concurrency (the old name still loads)" in notices
    assert (
        "environment variable MONITOR_JUDGE__MODEL is now MONITOR_LLM__MODEL (the old name still loads)"
        in (notices)
    )
    assert not any("claims_per_call" in n for n in notices)  # still the judge's own key

    # The new spelling wins over the old one, and an unconfigured [llm] means the embedded judge.
    path.write_text('[judge]\nmodel = "old"\n[llm]\nmodel = "new"\n', encoding="utf-8")
    monkeypatch.delenv("MONITOR_JUDGE__MODEL")
    settings = load_settings(path)
    assert settings.llm.model == "new"
    assert not settings.llm_configured() and settings.judge_provider() == "embedded"


def test_init_lists_the_llm_section_and_the_judge_keeps_its_own_keys() -> None:
    from monitor.scaffold import render_config

    text = render_config()
    llm = text.split("\n[llm]\n", 1)[1].split("\n[", 1)[0]
    judge = text.split("\n[judge]\n", 1)[1].split("\n[", 1)[0]
    for key in ("base_url", "model", "api_key", "concurrency", "timeout_seconds", "token_budget", "batch"):
        assert f"# {key} =" in llm and f"env: MONITOR_LLM__{key.upper()}" in llm
        assert f"# {key} =" not in judge
    for key in ("provider", "claims_per_call", "park_after_failures", "prompts_dir"):
        assert f"# {key} =" in judge


def test_the_embedded_judge_has_one_name_and_local_still_loads(tmp_path: Path, caplog) -> None:
    """`judge.provider = "local"` loads as "embedded" with a one-line notice; confirm_judges names it
    "embedded" and still holds the stored rows' "local" labels for a curator."""
    from monitor.judge_names import EMBEDDED, stored_judge_name
    from monitor.verdicts.rules import Thresholds

    config = tmp_path / "monitor.toml"
    config.write_text('[judge]\nprovider = "local"\n')
    with caplog.at_level("WARNING", logger="monitor.config"):
        settings = load_settings(config)
    assert settings.judge.provider == "embedded" and settings.judge_provider() == "embedded"
    [notice] = [r.getMessage() for r in caplog.records if "embedded" in r.getMessage()]
    assert notice == 'judge.provider "local" is now called "embedded"; read as "embedded"'
    assert Settings().judge_provider() == "embedded"
    assert Settings().verdicts.confirm_judges == ["embedded"]
    assert Thresholds.from_settings(Settings().verdicts).confirm_judges == frozenset({"local"})
    assert stored_judge_name(EMBEDDED) == "local"  # what stored assessments carry, and their cache keys


# --- issue 33: every number finite and bounded, every text one plain line ---------------------------


@pytest.mark.parametrize(
    ("toml", "key", "says"),
    [
        # A NaN cut or floor selected no pair: "none bears on a claim", mailed as final.
        ("[relevance]\ncut = nan\n", "relevance.cut", "Input should be a finite number"),
        ("[relevance]\nmin_score = nan\n", "relevance.min_score", "Input should be a finite number"),
        # Loaded, then an OverflowError traceback mid-run.
        ("[llm]\ntimeout_seconds = inf\n", "llm.timeout_seconds", "Input should be a finite number"),
        ("[llm]\ntimeout_seconds = 1e300\n", "llm.timeout_seconds", "less than or equal to 3600"),
        ("[database]\nbusy_timeout_seconds = inf\n", "database.busy_timeout_seconds", "a finite number"),
        ("[email]\ntimeout_seconds = inf\n", "email.timeout_seconds", "Input should be a finite number"),
        ("[arxiv]\ndelay_seconds = nan\n", "arxiv.delay_seconds", "Input should be a finite number"),
        ("[arxiv]\ndelay_seconds = inf\n", "arxiv.delay_seconds", "Input should be a finite number"),
        ("[arxiv]\ntimeout_seconds = inf\n", "arxiv.timeout_seconds", "Input should be a finite number"),
        # Nested: a table of tables, a list of tables.
        (
            "[verdicts]\nprecision = { embedded = { SUPPORTS = nan } }\n",
            "verdicts.precision.embedded.SUPPORTS",
            "Input should be a finite number",
        ),
        (
            '[[report.webhooks]]\nkind = "json"\nurl = "http://127.0.0.1:9/h"\ntimeout_seconds = inf\n',
            "report.webhooks.0.timeout_seconds",
            "Input should be a finite number",
        ),
        # Integers out of any sane range.
        ("[llm]\nconcurrency = 100000000\n", "llm.concurrency", "less than or equal to 256"),
        ("[schedule]\nlock_wait_seconds = 9223372036854775807\n", "schedule.lock_wait_seconds", "less than"),
        ("[llm]\nmax_retries = 5000\n", "llm.max_retries", "less than or equal to 20"),
        # Finite, in range, and still selecting nothing: a cut or floor at the method's highest score.
        ("[relevance]\ncut = 4.5\n", "relevance.cut", "at or above the highest score the hybrid method"),
        ('[relevance]\nmethod = "bm25"\nmin_score = 1\n', "relevance.min_score", "the bm25 method gives (1)"),
        # A stale time a late heartbeat reaches: a live run's lock taken over.
        ("[schedule]\nlock_stale_seconds = 20\n", "schedule.lock_stale_seconds", "less than twice"),
        # Text settings are one plain line: a NUL in a path, a CR/LF in a mail header.
        ('[paths]\nseeds = "seeds\\u0000x"\n', "paths.seeds", "contains a NUL character"),
        ('[email]\nsubject_prefix = "[m]\\r\\nBcc: a@b.example"\n', "email.subject_prefix", "control"),
        ('[arxiv]\ncategories = ["cs.AI", "cs.LG\\n"]\n', "arxiv.categories", "contains a line break"),
    ],
)
def test_nan_infinite_and_absurd_settings_name_file_and_key(
    tmp_path: Path, toml: str, key: str, says: str
) -> None:
    config = tmp_path / "monitor.toml"
    config.write_text(toml)
    done = monitor("--config", str(config), "runs", cwd=tmp_path)
    assert_config_error(done, f"{config}: invalid configuration: {key}: ", says)
    assert not (tmp_path / "monitor.db").exists()


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("MONITOR_RELEVANCE__CUT", "nan", "relevance.cut: Input should be a finite number"),
        ("MONITOR_LLM__TIMEOUT_SECONDS", "inf", "llm.timeout_seconds: Input should be a finite number"),
        ("MONITOR_ARXIV__DELAY_SECONDS", "1e300", "arxiv.delay_seconds: Input should be less than or equal"),
        ("MONITOR_RELEVANCE__CUT", "4", "relevance.cut: 4 is at or above the highest score"),
    ],
)
def test_nan_and_absurd_settings_from_the_environment_name_the_variable(
    tmp_path: Path, variable: str, value: str, says: str
) -> None:
    done = monitor("runs", cwd=tmp_path, **{variable: value})
    assert_config_error(done, says, f"(from environment variable {variable})")


def test_a_relevance_cut_is_checked_against_the_method_in_force(tmp_path: Path) -> None:
    """Under an LLM judge without its screen an unset method resolves to bm25 (scores 0..1): a cut of 1.5
    selects nothing there, though the hybrid's scores reach 4. (With the screen of every claim, the
    default under an LLM judge, no cut applies at all.)"""
    config = tmp_path / "monitor.toml"
    config.write_text('[relevance]\ncut = 1.5\nscreen = "none"\n')
    assert monitor("--config", str(config), "runs", cwd=tmp_path).returncode != 2  # embedded: hybrid
    done = monitor("--config", str(config), "runs", cwd=tmp_path, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    assert_config_error(done, "relevance.cut: 1.5 is at or above the highest score the bm25 method gives (1)")


def test_a_nan_cut_stops_monitor_run_before_anything_is_fetched_judged_or_mailed(tmp_path: Path) -> None:
    """The issue's case: mail on, `cut = nan`. Before, the run judged nothing, exit 0, and mailed "none
    bears on a claim" as final; now it stops at the configuration, before a database exists."""
    config = tmp_path / "monitor.toml"
    config.write_text(
        '[report]\nemail = true\n[email]\nhost = "127.0.0.1"\nport = 9\nrecipients = ["a@b.example"]\n'
        "[relevance]\ncut = nan\n"
    )
    done = monitor("--config", str(config), "run", "--source", "sample", cwd=tmp_path)
    assert_config_error(done, f"{config}: invalid configuration: relevance.cut: Input should be a finite")
    assert not (tmp_path / "monitor.db").exists() and not (tmp_path / "reports").exists()


def test_a_numeric_setting_without_an_upper_bound_cannot_be_defined() -> None:
    """So a new setting cannot forget its bound: its section fails when it is defined (at import)."""
    from pydantic import Field

    from monitor.config import Section

    with pytest.raises(TypeError, match=r"Example\.retries: a numeric setting needs an upper bound"):

        class Example(Section):
            retries: int = Field(default=3, ge=0)

    with pytest.raises(TypeError, match=r"Other\.wait: a numeric setting needs an upper bound"):

        class Other(Section):
            wait: float | None = None

    class Bounded(Section):
        retries: int = Field(default=3, ge=0, le=10)
        wait: float | None = Field(default=None, gt=0, le=60)

    assert Bounded(wait=1.5).wait == 1.5


def test_the_written_config_states_each_numbers_range() -> None:
    from monitor.scaffold import render_config

    text = render_config()
    llm = text.split("\n[llm]\n", 1)[1].split("\n[", 1)[0]
    assert "# range: 0 < value <= 3600\n# env: MONITOR_LLM__TIMEOUT_SECONDS" in llm
    assert "# range: 1 <= value <= 256\n# env: MONITOR_LLM__CONCURRENCY" in llm
