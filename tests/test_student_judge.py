"""The embedded judge: the shipped distilled cross-encoder, its inputs, its decisions and its answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from monitor.config import Settings
from monitor.embeddings import model_files
from monitor.judge.embedded import EmbeddedConfig, EmbeddedJudge, PairEncoder, decide_stance, load_config
from monitor.judge.factory import make_judge
from monitor.judge.grounding import ground
from monitor.judge.sentences import split_sentences
from monitor.llm.texts import ClaimText, PaperText

ABSTRACT = (
    "Large language models are increasingly trained with reinforcement learning. "
    "We study which parameters reinforcement learning actually changes during fine-tuning. "
    "Across seven algorithms and ten models, RL updates only a small subnetwork of 5% to 30% of the "
    "parameters, while supervised fine-tuning updates nearly all of them. "
    "The sparse subnetworks are consistent across random seeds and datasets."
)
PAPER = PaperText(
    "2505.11711", 1, "Reinforcement Learning Finetunes Small Subnetworks in Large Language Models", ABSTRACT
)
CLAIM = ClaimText(
    "c1", "RL fine-tuning updates only a sparse subset of parameters (5-30%) of a language model"
)
OFF_TOPIC = ClaimText(
    "c2", "Cross-encoder reranking improves answer quality in retrieval-augmented QA over financial reports"
)


def config(thresholds: dict[str, float]) -> EmbeddedConfig:
    labels = ("SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED")
    return EmbeddedConfig(labels, 160, 48, 1.0, (0.0, 0.0, 0.0, 0.0), thresholds, 0.7)


@pytest.fixture(scope="module")
def judge() -> EmbeddedJudge:
    return EmbeddedJudge()


# --- decisions ---------------------------------------------------------------------------------------


def test_a_stance_above_its_threshold_is_stated() -> None:
    d = decide_stance(
        np.array([0.8, 0.05, 0.05, 0.1]), config({"SUPPORTS": 0.7, "RELAXES": 0.7, "OVERTURNS": 0.7})
    )
    assert (d.label, d.abstained) == ("SUPPORTS", False)
    assert d.confidence == pytest.approx(0.8)


def test_a_related_pair_below_the_threshold_is_stance_unclear() -> None:
    d = decide_stance(
        np.array([0.45, 0.3, 0.05, 0.2]), config({"SUPPORTS": 0.7, "RELAXES": 0.7, "OVERTURNS": 0.7})
    )
    assert (d.label, d.abstained) == ("SUPPORTS", True)


def test_a_label_that_never_reached_the_precision_is_never_stated() -> None:
    # OVERTURNS at 0.95 but its threshold is 1.01 (never precise enough on the calibration slice).
    d = decide_stance(
        np.array([0.01, 0.02, 0.95, 0.02]), config({"SUPPORTS": 0.7, "RELAXES": 0.7, "OVERTURNS": 1.01})
    )
    assert (d.label, d.abstained) == ("OVERTURNS", True)


def test_an_unrelated_pair_is_unrelated_not_unclear() -> None:
    d = decide_stance(
        np.array([0.2, 0.1, 0.05, 0.65]), config({"SUPPORTS": 0.1, "RELAXES": 0.7, "OVERTURNS": 0.7})
    )
    assert (d.label, d.abstained) == ("UNRELATED", False)
    assert d.confidence == pytest.approx(0.65)


# --- inputs ------------------------------------------------------------------------------------------


def test_the_encoder_keeps_the_claim_and_the_sentences_that_share_its_words() -> None:
    encoder = PairEncoder(model_files()[1], max_tokens=60, claim_tokens=20)
    sentences = split_sentences(ABSTRACT)
    ids, types, best, shared = encoder.encode(CLAIM.text, PAPER.title, sentences)
    assert len(ids) <= 60 and len(ids) == len(types)
    assert ids[0] == encoder.cls_id and ids[-1] == encoder.sep_id
    # The claim is segment 0, the paper segment 1.
    first_sep = ids.index(encoder.sep_id)
    assert set(types[: first_sep + 1]) == {0} and set(types[first_sep + 1 :]) == {1}
    assert "5%" in sentences[best].text  # the sentence with the claim's words, not the first one
    assert {"paramet", "rl"} <= set(shared)  # the stemmed words it shares, named in the rationale
    shown = encoder.tokenizer.decode(ids[first_sep + 1 :])
    assert "subnetwork" in shown and "increasingly trained" not in shown  # 60 tokens: the best sentence won


# --- the shipped model -------------------------------------------------------------------------------


def test_the_shipped_model_is_the_local_provider_and_small(judge: EmbeddedJudge) -> None:
    config_, model_path, _ = load_config()
    assert model_path.stat().st_size < 30_000_000
    assert set(config_.thresholds) == {"SUPPORTS", "RELAXES", "OVERTURNS"}
    assert type(judge).name == "local"
    assert isinstance(make_judge(Settings(judge={"provider": "local"})), EmbeddedJudge)  # what "local" builds
    assert judge.model.startswith("minilm-student-int8-")


def test_the_paper_bears_on_its_own_finding_and_not_on_an_off_topic_claim(judge: EmbeddedJudge) -> None:
    probs, _ = judge.probabilities(PAPER, [CLAIM, OFF_TOPIC])
    unrelated = judge.config.labels.index("UNRELATED")
    related = 1.0 - probs[:, unrelated]
    assert related[0] > 0.5 > related[1]
    on_topic, off_topic = judge.judge(PAPER, [CLAIM, OFF_TOPIC])
    assert on_topic.label == "SUPPORTS"
    assert (off_topic.label, off_topic.evidence) == ("UNRELATED", "")


def test_evidence_is_a_verbatim_sentence_and_the_rationale_names_it(judge: EmbeddedJudge) -> None:
    (judgement,) = judge.judge(PAPER, [CLAIM])
    assert judgement.evidence in ABSTRACT and "5% to 30%" in judgement.evidence
    assert ground(judgement, PAPER).grounded
    assert "Sentence 3 of 4" in judgement.rationale and "cos" not in judgement.rationale


def test_judging_is_deterministic_and_independent_of_batching(judge: EmbeddedJudge) -> None:
    together = judge.judge(PAPER, [CLAIM, OFF_TOPIC])
    alone = [judge.judge(PAPER, [CLAIM])[0], judge.judge(PAPER, [OFF_TOPIC])[0]]
    for a, b in zip(together, alone, strict=True):
        assert (a.label, a.evidence, a.abstained) == (b.label, b.evidence, b.abstained)
        assert a.confidence == pytest.approx(b.confidence, abs=1e-3)


def test_no_prior_on_claim_length(judge: EmbeddedJudge) -> None:
    # Two dated claims of the seeds' length (20+ words): length does not decide, the content does.
    on_topic = ClaimText(
        "c3",
        "RL converges on single-peak reward optima, causing entropy collapse and parameter sparsity "
        "(only 5-30% of weights update in consistent subnetworks)",
        "~2025",
    )
    off_topic = ClaimText(
        "c4",
        "Retrieval-augmented generation over financial filings improves answer quality when a "
        "cross-encoder reranker is added to hybrid search over 10-K reports",
        "~2025",
    )
    probs, _ = judge.probabilities(PAPER, [on_topic, off_topic])
    related = 1.0 - probs[:, judge.config.labels.index("UNRELATED")]
    assert related[0] > 10 * related[1]


def test_a_missing_model_is_a_clear_error(tmp_path) -> None:
    (tmp_path / "student.json").write_text(json.dumps({"labels": []}))
    from monitor.errors import ConfigError

    with pytest.raises(ConfigError, match="train_student.py"):
        load_config(tmp_path)


# --- how it runs -------------------------------------------------------------------------------------


def test_the_student_runs_on_sleeping_threads_with_unchanged_numbers(judge: EmbeddedJudge, shared) -> None:
    """Real pairs (the domain dev set): the shipped session's threads sleep when idle (spinning ones
    doubled a run's CPU on a shared machine) and it gives exactly the numbers of onnxruntime's default
    session, one pair a call; a paper's claims judged together get each pair's own numbers (no batch
    neighbours: the int8 model quantises activations per call)."""
    import onnxruntime as ort

    from monitor.judge.embedded import pad_batch

    options = judge.session.get_session_options()
    for entry in ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning"):
        assert options.get_session_config_entry(entry) == "0"
    default = ort.SessionOptions()
    default.log_severity_level = 3
    reference = ort.InferenceSession(str(judge.model_path), default, providers=["CPUExecutionProvider"])
    rows = [json.loads(line) for line in (shared / "eval" / "domain_dev.jsonl").read_text().splitlines()]
    papers: dict[str, tuple[PaperText, list[ClaimText]]] = {}
    for i, row in enumerate(rows):
        paper = PaperText(row["arxiv_id"], 1, row["title"], row["abstract"])
        papers.setdefault(row["arxiv_id"], (paper, []))[1].append(ClaimText(f"c{i}", row["claim"]))
    assert len(papers) < len(rows)  # some papers carry several claims: one call each
    for paper, claims in papers.values():
        together, _ = judge.probabilities(paper, claims)
        sentences = split_sentences(paper.abstract)
        for claim, probs in zip(claims, together, strict=True):
            encoded = judge.encoder.encode(claim.text, paper.title, sentences)
            logits = reference.run(["logits"], pad_batch([(encoded.ids, encoded.types)]))[0]
            assert np.array_equal(judge.config.probabilities(logits)[0], probs)
            alone, _ = judge.probabilities(paper, [claim])
            assert np.array_equal(alone[0], probs)
