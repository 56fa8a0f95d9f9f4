"""`monitor eval`: run a judge over labelled (claim, paper) pairs and score it.

Pairs come one JSON object a line: {"claim", "title", "abstract", "label", ...extra fields}. The score
is macro-F1 over the labels present in the gold set, with per-class precision / recall / F1 and the
confusion matrix. No database is involved.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from monitor.errors import InputError, JudgeError
from monitor.judge.base import LABELS, Judge, Label
from monitor.judge.grounding import ground
from monitor.judge.second_look import SecondReading
from monitor.judge_names import shown_judge
from monitor.llm.texts import ClaimText, PaperText

_REQUIRED_TEXT = ("claim", "title", "abstract")


@dataclass(frozen=True)
class LabelledPair:
    """One labelled example: a claim, a paper's title and abstract, and the gold label."""

    claim: str
    title: str
    abstract: str
    label: Label
    line: int
    extra: dict[str, Any] = field(default_factory=dict)


def read_pairs(path: Path, limit: int | None = None) -> list[LabelledPair]:
    """Read a pairs file; any bad line raises InputError naming file, line and field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read pairs file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(str(path), None, "pairs file is not UTF-8 text") from None
    pairs: list[LabelledPair] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        pairs.append(_parse_line(path, number, raw))
        if limit is not None and len(pairs) >= limit:
            break
    if not pairs:
        raise InputError(str(path), None, "no pairs in file")
    return pairs


def _parse_line(path: Path, number: int, raw: str) -> LabelledPair:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), number, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise InputError(str(path), number, "expected a JSON object")
    for name in _REQUIRED_TEXT:
        value = obj.get(name)
        if not isinstance(value, str):
            raise InputError(str(path), number, f"field '{name}': missing or not a string")
        if name != "title" and not value.strip():
            raise InputError(str(path), number, f"field '{name}': empty")
    label = obj.get("label")
    if label not in LABELS:
        raise InputError(str(path), number, f"field 'label': {label!r} is not one of {', '.join(LABELS)}")
    extra = {k: v for k, v in obj.items() if k not in (*_REQUIRED_TEXT, "label")}
    return LabelledPair(obj["claim"], obj["title"], obj["abstract"], label, number, extra)


@dataclass(frozen=True)
class ClassScore:
    """Precision, recall and F1 of one label, and how many gold pairs carry it."""

    precision: float
    recall: float
    f1: float
    support: int


@dataclass
class Scores:
    """Scores of predictions against gold labels."""

    labels: list[str]  # the labels scored (present in gold), in LABELS order
    macro_f1: float
    per_class: dict[str, ClassScore]
    confusion: dict[str, dict[str, int]]  # confusion[gold][predicted]
    n: int
    accuracy: float


def score(gold: list[str], predicted: list[str]) -> Scores:
    """Macro-F1 over the gold labels present; a predicted label absent from gold only costs recall."""
    if len(gold) != len(predicted):
        raise ValueError("gold and predicted differ in length")
    present = [label for label in LABELS if label in set(gold)]
    shown = [label for label in LABELS if label in set(gold) | set(predicted)]
    confusion = {g: {p: 0 for p in shown} for g in shown}
    for g, p in zip(gold, predicted, strict=True):
        confusion[g][p] += 1
    per_class: dict[str, ClassScore] = {}
    for label in shown:
        tp = confusion[label][label]
        predicted_n = sum(confusion[g][label] for g in shown)
        support = sum(confusion[label].values())
        precision = tp / predicted_n if predicted_n else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[label] = ClassScore(precision, recall, f1, support)
    macro = sum(per_class[label].f1 for label in present) / len(present) if present else 0.0
    correct = sum(g == p for g, p in zip(gold, predicted, strict=True))
    return Scores(present, macro, per_class, confusion, len(gold), correct / len(gold) if gold else 0.0)


def as_three_way(predicted: Iterable[str]) -> list[str]:
    """RELAXES means "the claim holds, more narrowly": on a set without RELAXES it counts as SUPPORTS."""
    return ["SUPPORTS" if p == "RELAXES" else p for p in predicted]


@dataclass
class Prediction:
    """The judge's answer for one pair, after evidence grounding; `error` when no valid answer came."""

    pair: LabelledPair
    label: str
    confidence: float
    evidence: str
    rationale: str = ""
    grounded: bool = True
    error: str | None = None
    abstained: bool = False  # "related, stance unclear": the label is a guess the judge did not state
    strength: str = ""
    # With a second look: the first reading's label, and whether the two agreed ("" no second look). A
    # pair whose readings disagree goes to a curator in the pipeline: here it is withheld (abstained),
    # with the closer, second reading's label as its best guess.
    first_label: str = ""
    second_look: str = ""

    def as_record(self) -> dict[str, Any]:
        """The pair as read, plus the judge's answer: a pairs-format line (`--predictions`)."""
        pair = self.pair
        return {
            "claim": pair.claim,
            "title": pair.title,
            "abstract": pair.abstract,
            **pair.extra,
            "gold": pair.label,
            "predicted": self.label,
            "confidence": round(self.confidence, 4),
            "rationale": self.rationale,
            "evidence": self.evidence,
            "grounded": self.grounded,
            "abstained": self.abstained,
            "strength": self.strength,
            "first_label": self.first_label,
            "second_look": self.second_look,
            "error": self.error,
        }


@dataclass(frozen=True)
class OperatingPoint:
    """What a reader of the judge's output gets: labels it states, and the share it withholds.

    Precision and recall of each stance count only stated labels: a pair the judge marked "related,
    stance unclear" is neither right nor wrong there (it goes to review), but costs recall.
    """

    abstain_share: float
    per_label: dict[str, ClassScore]


def operating_point(predictions: list[Prediction]) -> OperatingPoint:
    n = len(predictions)
    per_label: dict[str, ClassScore] = {}
    for label in LABELS:
        stated = [p for p in predictions if p.label == label and not p.abstained]
        support = sum(1 for p in predictions if p.pair.label == label)
        right = sum(1 for p in stated if p.pair.label == label)
        precision = right / len(stated) if stated else 0.0
        recall = right / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_label[label] = ClassScore(precision, recall, f1, support)
    abstained = sum(1 for p in predictions if p.abstained)
    return OperatingPoint(abstained / n if n else 0.0, per_label)


MIN_STATED_FOR_PRECISION = 5  # fewer stated labels than this measure nothing worth configuring


def verdict_precision(predictions: list[Prediction]) -> dict[str, float]:
    """Each stance's precision where the judge stated it often enough: `[verdicts.precision.<judge>]`.

    The verdict rules cap a label's confidence at this (docs/verdicts.md). A gold set without RELAXES
    (SciFact) cannot measure RELAXES.
    """
    three_way = not any(p.pair.label == "RELAXES" for p in predictions)
    out: dict[str, float] = {}
    for label in ("SUPPORTS", "RELAXES", "OVERTURNS"):
        stated = [p for p in predictions if p.label == label and not p.abstained and not p.error]
        if len(stated) < MIN_STATED_FOR_PRECISION or (three_way and label == "RELAXES"):
            continue
        right = sum(1 for p in stated if p.pair.label == label)
        out[label] = round(right / len(stated), 2)
    return out


@dataclass
class EvalReport:
    """Everything `monitor eval` prints."""

    pairs_file: str
    judge: str
    model: str
    strict: Scores
    three_way: Scores | None  # only for gold sets without RELAXES
    predictions: list[Prediction]
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        main = self.strict
        out: dict[str, Any] = {
            "pairs_file": self.pairs_file,
            "judge": self.judge,
            "model": self.model,
            "n": main.n,
            "labels": main.labels,
            "macro_f1": round(main.macro_f1, 4),
            "accuracy": round(main.accuracy, 4),
            "per_class": _per_class_dict(main),
            "confusion": main.confusion,
            "errors": sum(1 for p in self.predictions if p.error),
            "ungrounded": sum(1 for p in self.predictions if not p.grounded and not p.error),
            "seconds": round(self.seconds, 2),
            "pairs_per_second": round(main.n / self.seconds, 2) if self.seconds > 0 else None,
        }
        point = operating_point(self.predictions)
        out["operating_point"] = {
            "abstain_share": round(point.abstain_share, 4),
            "stated": {
                label: {"precision": round(s.precision, 4), "recall": round(s.recall, 4)}
                for label, s in point.per_label.items()
                if s.support or any(p.label == label and not p.abstained for p in self.predictions)
            },
        }
        out["verdict_precision"] = verdict_precision(self.predictions)
        if self.three_way is not None:
            out["macro_f1_3way"] = round(self.three_way.macro_f1, 4)
            out["per_class_3way"] = _per_class_dict(self.three_way)
            out["confusion_3way"] = self.three_way.confusion
        return out


def _per_class_dict(scores: Scores) -> dict[str, dict[str, float | int]]:
    return {
        label: {
            "precision": round(s.precision, 4),
            "recall": round(s.recall, 4),
            "f1": round(s.f1, 4),
            "support": s.support,
        }
        for label, s in scores.per_class.items()
    }


def evaluate(
    judge: Judge,
    pairs: list[LabelledPair],
    pairs_file: str = "",
    on_progress: Callable[[int], None] | None = None,
    second: SecondReading | None = None,
) -> EvalReport:
    """Judge every pair (one claim per call, as the pairs are independent) and score the answers; with
    `second`, each answer it names gets its second reading, as in the pipeline (judge/second_look.py)."""
    started = time.perf_counter()
    predictions: list[Prediction] = []
    for index, pair in enumerate(pairs):
        predictions.append(_predict(judge, pair, second))
        if on_progress is not None:
            on_progress(index + 1)
    seconds = time.perf_counter() - started
    gold = [p.pair.label for p in predictions]
    predicted = [p.label for p in predictions]
    strict = score(gold, predicted)
    three_way = score(gold, as_three_way(predicted)) if "RELAXES" not in gold else None
    return EvalReport(
        pairs_file=pairs_file,
        judge=shown_judge(judge.name),
        model=judge.model,
        strict=strict,
        three_way=three_way,
        predictions=predictions,
        seconds=seconds,
    )


def _predict(judge: Judge, pair: LabelledPair, second: SecondReading | None = None) -> Prediction:
    """One pair as the pipeline would judge it: the claim's date shown, the quote grounded.

    A pair with no valid answer (refusal, invalid twice) counts as UNRELATED with its error kept,
    so one bad answer does not end the evaluation.
    """
    published = str(pair.extra.get("published") or "")[:10] or None  # shown to the judge as the pipeline does
    paper = PaperText(f"pair-{pair.line}", 1, pair.title, pair.abstract, published)
    date_text = pair.extra.get("claim_date")
    claim = ClaimText(id=f"line-{pair.line}", text=pair.claim, date_text=date_text or None)
    try:
        judgement = judge.judge(paper, [claim])[0]
    except JudgeError as exc:
        if getattr(exc, "fatal", False):  # a bad key or model fails every pair alike
            raise
        return Prediction(pair, "UNRELATED", 0.0, "", grounded=False, error=str(exc))
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        # The client raises these raw for a reply it cannot read (a 200 whose body is not JSON):
        # still one bad answer, not the end of the evaluation.
        error = f"unreadable reply ({exc.__class__.__name__}: {str(exc)[:200]})"
        return Prediction(pair, "UNRELATED", 0.0, "", grounded=False, error=error)
    grounding = ground(judgement, paper, pair.claim)
    first = Prediction(
        pair,
        judgement.label,
        grounding.confidence,
        judgement.evidence,
        rationale=judgement.rationale,
        grounded=grounding.grounded,
        abstained=judgement.abstained,
        strength=judgement.strength,
    )
    if second is None or not second.needed(judgement):
        return first
    try:
        closer = second.read(paper, claim, judgement)
    except JudgeError as exc:
        if getattr(exc, "fatal", False):
            raise
        # No second reading: in the pipeline the pair waits for one; here it is withheld.
        failed = {"abstained": True, "first_label": judgement.label, "second_look": "failed"}
        return replace(first, error=str(exc), **failed)
    grounded = ground(closer, paper, pair.claim)
    agrees = closer.label == judgement.label
    return Prediction(
        pair,
        closer.label,
        min(first.confidence, grounded.confidence) if agrees else grounded.confidence,
        closer.evidence if grounded.grounded or not agrees else judgement.evidence,
        rationale=closer.rationale,
        grounded=grounded.grounded or (agrees and first.grounded),
        abstained=not agrees,
        strength=closer.strength,
        first_label=judgement.label,
        second_look="agreed" if agrees else "disagreed",
    )


def label_counts(pairs: list[LabelledPair]) -> Counter[str]:
    return Counter(p.label for p in pairs)


def print_report(console: Any, report: EvalReport) -> None:
    """Rich tables: the headline scores, per-class precision / recall / F1, and the confusion matrix."""
    _print_headline(console, report)
    _print_tables(console, report.strict)
    _print_operating_point(console, report)


def _print_headline(console: Any, report: EvalReport) -> None:
    strict = report.strict
    head = f"{report.pairs_file}: {strict.n} pairs, judge {report.judge} ({report.model})"
    console.print(head, highlight=False, soft_wrap=True)
    line = f"macro-F1 {strict.macro_f1:.3f} over {', '.join(strict.labels)}; accuracy {strict.accuracy:.3f}"
    if report.three_way is not None:
        line += f"; 3-way macro-F1 (RELAXES counted as SUPPORTS) {report.three_way.macro_f1:.3f}"
    rate = strict.n / report.seconds if report.seconds > 0 else float("nan")
    console.print(f"{line}; {rate:.1f} pairs/s", highlight=False, soft_wrap=True)
    failed = [p for p in report.predictions if p.error]
    if failed:
        console.print(
            f"errors: {len(failed)} pair(s) got no valid answer and count as UNRELATED; "
            f"first (line {failed[0].pair.line}): {failed[0].error}",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


def _print_tables(console: Any, strict: Scores) -> None:
    from rich.table import Table

    per_class = Table(title="per class")
    for column in ("label", "precision", "recall", "F1", "support"):
        per_class.add_column(column, justify="left" if column == "label" else "right")
    for label, s in strict.per_class.items():
        per_class.add_row(label, f"{s.precision:.3f}", f"{s.recall:.3f}", f"{s.f1:.3f}", str(s.support))
    console.print(per_class)

    confusion = Table(title="confusion (rows: gold, columns: predicted)")
    confusion.add_column("gold \\ predicted")
    shown = list(strict.confusion)
    for label in shown:
        confusion.add_column(label, justify="right")
    for gold in shown:
        confusion.add_row(gold, *(str(strict.confusion[gold][p]) for p in shown))
    console.print(confusion)


def _print_operating_point(console: Any, report: EvalReport) -> None:
    from rich.table import Table

    point = operating_point(report.predictions)
    if point.abstain_share:
        title = f"stated labels (abstains on {point.abstain_share:.1%} of pairs: stance unclear)"
        stated = Table(title=title)
        for column in ("label", "precision", "recall"):
            stated.add_column(column, justify="left" if column == "label" else "right")
        for label, s in point.per_label.items():
            stated.add_row(label, f"{s.precision:.3f}", f"{s.recall:.3f}")
        console.print(stated)
    measured = verdict_precision(report.predictions)
    if measured:
        console.print(
            "For the verdict rules (docs/verdicts.md), this judge's measured precision, to put in"
            f" monitor.toml if this set is like your claims:\n[verdicts.precision.{report.judge}]",
            highlight=False,
            soft_wrap=True,
        )
        for label, value in measured.items():
            console.print(f"{label} = {value}", highlight=False)
