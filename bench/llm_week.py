"""The 6,000-paper week through an LLM judge: a local OpenAI-compatible server, 1 s a call, 8 slots.

    nice python bench/llm_week.py [--papers 6000] [--latency 1.0] [--slots 8]

The week is scale.py's: the first `--papers` corpus papers (held-out ones left out) re-dated into
2026-W20, the seeds' 35 claims, the LLM judge's relevance default. The server is tests/llm_server.py's
scripted one: each chat request waits for one of `--slots` slots, holds it `--latency` seconds and
answers every claim UNRELATED. It counts requests by the hash of their messages, so a request sent
twice shows. judge.concurrency = slots. The stages run as child processes (`monitor relevance`,
then `monitor judge --skip-relevance`); printed for each: wall and CPU seconds and peak RSS, with the
calls and the floor (calls x latency / slots). A slice smaller than the week (`--papers 1500`) is
extrapolated per paper, and says so.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from llm_server import Reply, ScriptedLLM, answer, completion  # noqa: E402
from scale import MONITOR, timed, week  # noqa: E402

WEEK_PAPERS = 6000


class SlotServer:
    """Answers judge requests UNRELATED after `latency` s, at most `slots` at once; counts by hash."""

    def __init__(self, llm: ScriptedLLM, latency: float, slots: int) -> None:
        self.latency = latency
        self.slots = threading.BoundedSemaphore(slots)
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        llm.default = self.respond

    def respond(self, request: Any) -> Reply:
        key = hashlib.sha256(json.dumps(request["messages"], sort_keys=True).encode()).hexdigest()
        with self.lock:
            self.seen[key] += 1
        with self.slots:  # a server with `slots` decoders: the rest queue here
            time.sleep(self.latency)
        return Reply(body=completion(answer(request, "UNRELATED", evidence=""), prompt_tokens=900))


def run(papers: int, latency: float, slots: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="llm-week-") as tmp, ScriptedLLM() as llm:
        work = Path(tmp)
        server = SlotServer(llm, latency, slots)
        (work / "monitor.toml").write_text(
            f'[database]\nurl = "sqlite:///{work / "week.db"}"\n[paths]\nseeds = "{REPO / "seeds"}"\n'
            f'reports = "{work / "reports"}"\n[judge]\nprovider = "openai"\nbase_url = "{llm.url}"\n'
            f'model = "bench"\napi_key = "bench"\nconcurrency = {slots}\n',
            encoding="utf-8",
        )
        got = week(work / "week.jsonl", papers)
        base = [MONITOR, "--config", str(work / "monitor.toml")]
        for args in (["seeds", "import"], ["fetch", "--source", str(work / "week.jsonl")]):
            subprocess.run(base + args, check=True, capture_output=True, cwd=work)
        relevance = timed(work, "relevance")
        judged = timed(work, "judge", "--skip-relevance")
        calls = sum(server.seen.values())
        return {
            "papers": got,
            "calls": calls,
            "distinct_requests": len(server.seen),
            "sent_twice": sum(n - 1 for n in server.seen.values() if n > 1),
            "peak_in_flight": llm.peak_in_flight,
            "floor_s": round(calls * latency / slots, 1),
            "relevance": relevance,
            "judge": judged,
            "judge_wall_over_floor": round(judged["wall_s"] / max(calls * latency / slots, 1e-9), 2),
            "load_avg": os.getloadavg(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=WEEK_PAPERS)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=8)
    args = parser.parse_args()
    result = run(args.papers, args.latency, args.slots)
    if result["papers"] < WEEK_PAPERS:
        per = WEEK_PAPERS / result["papers"]
        result["extrapolated_to_6000_papers"] = {
            "calls": round(result["calls"] * per),
            "floor_s": round(result["floor_s"] * per),
            "judge_wall_s": round(result["judge"]["wall_s"] * per),
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
