"""`monitor eval`: metrics computed by hand, the pairs reader's errors, and the CLI end to end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ops_helpers import cli

from monitor.errors import InputError
from monitor.judge.evaluate import (
    LabelledPair,
    Prediction,
    as_three_way,
    read_pairs,
    score,
    verdict_precision,
)

S, R, OV, U = "SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED"


def test_score_matches_hand_computed_f1() -> None:
    gold = [S, S, OV, U, U, U]
    pred = [S, OV, OV, U, S, U]
    scores = score(gold, pred)
    # SUPPORTS: tp 1, predicted 2, gold 2 -> P 1/2, R 1/2, F1 1/2
    # OVERTURNS: tp 1, predicted 2, gold 1 -> P 1/2, R 1, F1 2/3
    # UNRELATED: tp 2, predicted 2, gold 3 -> P 1, R 2/3, F1 4/5
    assert scores.per_class[S].f1 == pytest.approx(1 / 2)
    assert scores.per_class[OV].precision == pytest.approx(1 / 2)
    assert scores.per_class[OV].recall == pytest.approx(1.0)
    assert scores.per_class[OV].f1 == pytest.approx(2 / 3)
    assert scores.per_class[U].recall == pytest.approx(2 / 3)
    assert scores.per_class[U].f1 == pytest.approx(4 / 5)
    assert scores.macro_f1 == pytest.approx(59 / 90)
    assert scores.accuracy == pytest.approx(4 / 6)
    assert scores.confusion[U] == {S: 1, OV: 0, U: 2}
    assert scores.per_class[U].support == 3


def test_relaxes_on_a_set_without_relaxes_is_strict_error_but_three_way_supports() -> None:
    gold = [S, S, OV, U]
    pred = [R, S, OV, U]
    strict = score(gold, pred)
    # RELAXES is not a gold label: it is shown but not averaged; it costs SUPPORTS recall.
    assert strict.labels == [S, OV, U]
    assert strict.per_class[R].support == 0
    assert strict.per_class[S].recall == pytest.approx(1 / 2)
    assert strict.macro_f1 == pytest.approx((2 / 3 + 1 + 1) / 3)
    three = score(gold, as_three_way(pred))
    assert three.macro_f1 == pytest.approx(1.0)


def test_verdict_precision_counts_stated_labels_and_needs_enough_of_them() -> None:
    def pred(gold: str, label: str, abstained: bool = False) -> Prediction:
        return Prediction(LabelledPair("c", "t", "a", gold, 1), label, 0.9, "", abstained=abstained)  # type: ignore[arg-type]

    preds = [pred(S, S)] * 4 + [pred(U, S)] + [pred(U, S, abstained=True)] * 3  # withheld: not counted
    preds += [pred(OV, OV)] * 3 + [pred(R, R)] * 6  # OVERTURNS stated 3 times: too few to measure
    assert verdict_precision(preds) == {"SUPPORTS": 0.8, "RELAXES": 1.0}
    # Without RELAXES in the gold set, RELAXES is not measured.
    assert verdict_precision([pred(S, R)] * 6 + [pred(S, S)] * 5) == {"SUPPORTS": 1.0}


def test_macro_is_over_labels_present_only() -> None:
    scores = score([S, S, U], [S, OV, U])
    # OVERTURNS never occurs in gold: precision 0 is reported, but the average is over S and U.
    assert scores.labels == [S, U]
    assert scores.macro_f1 == pytest.approx((2 / 3 + 1) / 2)


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


GOOD = {"claim": "c", "title": "t", "abstract": "a b c.", "label": "SUPPORTS", "why": "extra is kept"}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
        ("[1, 2]", "expected a JSON object"),
        ({**GOOD, "label": "MAYBE"}, "field 'label'"),
        ({k: v for k, v in GOOD.items() if k != "abstract"}, "field 'abstract'"),
        ({**GOOD, "claim": "   "}, "field 'claim': empty"),
        ({**GOOD, "title": 3}, "field 'title'"),
    ],
)
def test_bad_pairs_line_names_file_line_and_field(tmp_path: Path, bad: object, message: str) -> None:
    path = _write(tmp_path / "pairs.jsonl", [GOOD, "", bad])
    with pytest.raises(InputError) as info:
        read_pairs(path)
    assert f"{path}:3:" in str(info.value)
    assert message in str(info.value)


def test_read_pairs_keeps_extras_and_honours_limit(tmp_path: Path) -> None:
    path = _write(tmp_path / "pairs.jsonl", [GOOD, {**GOOD, "label": "UNRELATED"}, "{broken"])
    pairs = read_pairs(path, limit=2)
    assert [p.label for p in pairs] == [S, U]
    assert pairs[0].extra == {"why": "extra is kept"}
    assert pairs[1].line == 2


def test_empty_or_missing_pairs_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no pairs"):
        read_pairs(_write(tmp_path / "empty.jsonl", [""]))
    with pytest.raises(InputError, match="cannot read"):
        read_pairs(tmp_path / "absent.jsonl")


SMALL_PAIRS = [
    {
        "claim": "Aspirin reduces the risk of colorectal cancer.",
        "title": "Daily aspirin and colorectal cancer incidence: a randomised trial",
        "abstract": (
            "We followed 20,000 adults for ten years. "
            "Daily aspirin reduced the risk of colorectal cancer by 24% compared with placebo. "
            "Gastrointestinal bleeding was more frequent in the aspirin group."
        ),
        "label": S,
    },
    {
        "claim": "Aspirin reduces the risk of colorectal cancer.",
        "title": "Graph neural networks for traffic forecasting",
        "abstract": (
            "We propose a spatio-temporal graph neural network for traffic speed forecasting. "
            "On two highway datasets it lowers the mean absolute error of strong baselines."
        ),
        "label": U,
    },
    {
        "claim": "Vitamin D supplementation lowers the risk of fractures in older adults.",
        "title": "Vitamin D supplementation and fractures in older adults",
        "abstract": (
            "In a trial of 25,000 adults over 70, participants received vitamin D or placebo for five years. "
            "Vitamin D supplementation did not reduce the risk of fractures compared with placebo. "
            "Adverse events were similar in both groups."
        ),
        "label": OV,
    },
]


def _monitor(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MONITOR_JUDGE"))}
    env["HF_HUB_OFFLINE"] = "1"
    return cli(*args, environ=env, cwd=cwd)


def test_eval_cli_json_and_tables(tmp_path: Path) -> None:
    path = _write(tmp_path / "small.jsonl", SMALL_PAIRS)
    result = _monitor(["eval", "--pairs", str(path), "--judge", "local", "--json"], tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["n"] == 3
    assert data["judge"] == "embedded"  # its old name on the command line, its name in the output
    assert set(data["per_class"]) >= {S, OV, U}
    assert sum(sum(row.values()) for row in data["confusion"].values()) == 3
    assert 0.0 <= data["macro_f1"] <= 1.0
    assert "macro_f1_3way" in data  # no RELAXES in gold: the 3-way score is reported beside the strict one
    assert not (tmp_path / "monitor.db").exists()  # eval needs no database

    tables = _monitor(["eval", "--pairs", str(path), "--judge", "embedded", "--limit", "2"], tmp_path)
    assert tables.returncode == 0, tables.stderr
    assert "2 pairs, judge embedded (" in tables.stdout and "local" not in tables.stdout
    assert "macro-F1" in tables.stdout
    assert "confusion" in tables.stdout


def test_eval_cli_bad_file_exits_with_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.jsonl", [SMALL_PAIRS[0], {**SMALL_PAIRS[1], "label": "REFUTES"}])
    result = _monitor(["eval", "--pairs", str(path), "--judge", "local"], tmp_path)
    assert result.returncode == 3
    assert f"{path}:2: field 'label'" in result.stderr
    assert "Traceback" not in result.stderr


def test_openai_eval_counts_a_bad_answer_and_goes_on_and_writes_predictions(tmp_path: Path) -> None:
    """A real HTTP server: the claim's date reaches the prompt; a refusal is one error, not the end."""
    from llm_server import Reply, ScriptedLLM, answer, completion

    pairs = [{**SMALL_PAIRS[0], "claim_date": "~2024"}, SMALL_PAIRS[1], SMALL_PAIRS[2]]
    path = _write(tmp_path / "small.jsonl", pairs)
    with ScriptedLLM() as llm:
        def respond(request: dict) -> Reply:
            user = next(m["content"] for m in request["messages"] if m["role"] == "user")
            if "Graph neural networks" in user:
                return Reply(body=completion("I cannot help with that.", refusal="I cannot help with that."))
            if "Vitamin D" in user:
                quote = "did not reduce the risk of fractures"
                return Reply(body=completion(answer(request, "OVERTURNS", quote)))
            quote = "Daily aspirin reduced the risk of colorectal cancer by 24%"
            return Reply(body=completion(answer(request, "SUPPORTS", quote)))

        llm.default = respond
        env = {
            "MONITOR_JUDGE__BASE_URL": llm.url,
            "MONITOR_JUDGE__API_KEY": "sk-test",
            "MONITOR_JUDGE__MAX_RETRIES": "0",
        }
        out = tmp_path / "predictions.jsonl"
        result = cli(
            "eval", "--pairs", str(path), "--judge", "openai", "--json", "--predictions", str(out),
            environ={**os.environ, **env}, cwd=tmp_path,
        )  # fmt: skip
        first_user = next(m["content"] for m in llm.requests[0].body["messages"] if m["role"] == "user")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["n"] == 3 and data["errors"] == 1
    assert 'made="~2024"' in first_user
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["predicted"] for r in rows] == [S, U, OV]
    assert [r["gold"] for r in rows] == [S, U, OV]
    assert rows[0]["grounded"] is True and rows[0]["claim_date"] == "~2024"
    assert rows[1]["error"] and "refused" in rows[1]["error"]
    assert data["operating_point"]["abstain_share"] == 0.0


def test_openai_eval_counts_an_unreadable_reply_as_an_error_and_goes_on(tmp_path: Path) -> None:
    """A 200 whose body is not JSON (a proxy's error page) is one error in the report, not the end."""
    from llm_server import Reply, ScriptedLLM, answer, completion

    path = _write(tmp_path / "small.jsonl", SMALL_PAIRS)
    with ScriptedLLM() as llm:

        def respond(request: dict) -> Reply:
            user = next(m["content"] for m in request["messages"] if m["role"] == "user")
            if "Graph neural networks" in user:
                return Reply(body="<html>502 Bad Gateway</html>")
            return Reply(body=completion(answer(request, "SUPPORTS")))

        llm.default = respond
        env = {
            "MONITOR_JUDGE__BASE_URL": llm.url,
            "MONITOR_JUDGE__API_KEY": "sk-test",
            "MONITOR_JUDGE__MAX_RETRIES": "0",
            "COLUMNS": "200",
        }
        run = ["eval", "--pairs", str(path)]
        as_json = cli(*run, "--judge", "openai", "--json", environ={**os.environ, **env}, cwd=tmp_path)
        tables = cli(*run, "--judge", "openai", environ={**os.environ, **env}, cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["n"] == 3 and data["errors"] == 1
    assert tables.returncode == 0, tables.stderr
    assert "errors: 1 pair(s) got no valid answer" in tables.stdout and "unreadable reply" in tables.stdout
