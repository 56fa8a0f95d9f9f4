"""What the embedded judge's triage cut (`judge.embedded_top_k`) changes for a reader, and what it saves.

    nice python bench/triage_cut.py --config DIR/monitor.toml --period 2026-W20 --k 5,10,20,40
    nice python bench/triage_cut.py --config DIR/monitor.toml --period week --since-period --k 5,10

The store must be SQLite and judged by the embedded judge with no cut over the period (e.g.
bench/week_speed.py --keep DIR, or `monitor run --source sample` with
MONITOR_JUDGE__EMBEDDED_CUT_ABOVE_CLAIMS=1000000). Its digest's triage lists ("Papers the embedded model
ranks closest to this claim", three per claim) are the reference. For each K (and "all", no cut), a copy
of the store loses its assessments and verdicts and is judged again with that cut (a child process:
wall, user+sys CPU, peak RSS, pairs judged), then the period's digest is gathered: for each claim whose
reference list is not empty, how many of its (up to) three papers are the same, and how many claims keep
the same list. With `--since-period`, only the period's papers are judged (as `monitor run --source
sample` does), so the sample's other weeks cost nothing.

Prints one JSON object per K.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import delete, func, select  # noqa: E402

from monitor.config import Settings, load_settings  # noqa: E402
from monitor.report.digest import choose_period  # noqa: E402
from monitor.report.gather import gather_digest  # noqa: E402
from monitor.report.period import Period  # noqa: E402
from monitor.store import open_store  # noqa: E402
from monitor.store.models import Assessment, Candidate, Verdict  # noqa: E402

NO_CUT = 1_000_000  # embedded_cut_above_claims above any library: the cut never applies


def triage_lists(url: str, settings: Settings, period: Period) -> dict[str, list[str]]:
    """Each claim's triage papers as the period's digest lists them (up to three, in order)."""
    view = gather_digest(open_store(url), settings, period)
    return {c.id: [t.item.arxiv_id for t in c.triage] for line in view.lines for c in line.claims}


def cut_env(k: int | None) -> dict[str, str]:
    if k is None:
        return {"MONITOR_JUDGE__EMBEDDED_CUT_ABOVE_CLAIMS": str(NO_CUT)}
    return {"MONITOR_JUDGE__EMBEDDED_TOP_K": str(k), "MONITOR_JUDGE__EMBEDDED_CUT_ABOVE_CLAIMS": "0"}


def judge_child(config: str, since: str | None) -> None:
    """In the child: judge what is pending (from `since`), print pairs judged and the cut's count."""
    from monitor.judge.runner import judge_pending

    settings = load_settings(config)
    store = open_store(settings.database.url)
    day = dt.date.fromisoformat(since) if since else None
    summary = judge_pending(store, settings, since=day)
    print(json.dumps({"judged": summary.judged, "below_cut": summary.below_cut, "cut": summary.triage_cut}))


def judge_copy(work: Path, config: Path, k: int | None, since: dt.date | None) -> dict[str, object]:
    """Judge the copy in `work` with cut `k` in a child process: its wall, CPU, peak RSS and counts."""
    cmd = [sys.executable, __file__, "--child", str(config)]
    cmd += ["--since", since.isoformat()] if since else []
    started = time.monotonic()
    with (work / "child.out").open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ | cut_env(k))
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit((work / "child.out").read_text()[-3000:])
    counts = json.loads((work / "child.out").read_text().strip().splitlines()[-1])
    return counts | {
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "rss_mib": round(usage.ru_maxrss / 1024),
    }


def compare(reference: dict[str, list[str]], cut: dict[str, list[str]]) -> dict[str, int]:
    shown = {c: papers for c, papers in reference.items() if papers}
    same = sum(len(set(papers) & set(cut.get(c, []))) for c, papers in shown.items())
    return {
        "claims_with_triage": len(shown),
        "papers_shown": sum(len(p) for p in shown.values()),
        "papers_same": same,
        "claims_same_list": sum(1 for c, papers in shown.items() if cut.get(c, []) == papers),
        "claims_same_set": sum(1 for c, papers in shown.items() if set(cut.get(c, [])) == set(papers)),
        "claims_gaining_triage": sum(1 for c, papers in cut.items() if papers and not reference.get(c)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path)
    parser.add_argument("--period", default="week", help="a period key (2026-W20) or week/month")
    parser.add_argument("--k", default="5,10,20,40", help="cuts to try, comma-separated; 'all' is no cut")
    parser.add_argument("--since-period", action="store_true", help="judge only the period's papers")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--since", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        judge_child(args.child, args.since)
        return
    settings = load_settings(args.config)
    url = settings.database.url
    if not url.startswith("sqlite:///"):
        raise SystemExit("the reference store must be SQLite (it is copied per cut)")
    source = Path(url.removeprefix("sqlite:///"))
    store = open_store(url)
    period = choose_period(store, args.period)
    reference = triage_lists(url, settings, period)
    with store.session() as s:
        pairs = s.scalar(select(func.count()).select_from(Candidate)) or 0
    print(json.dumps({"period": period.key, "candidates": pairs, "load_avg": os.getloadavg()}), flush=True)
    since = period.start if args.since_period else None
    for raw in args.k.split(","):
        k = None if raw == "all" else int(raw)
        with tempfile.TemporaryDirectory(prefix="cut-") as tmp:
            work = Path(tmp)
            shutil.copy(source, work / "monitor.db")
            copy_url = f"sqlite:///{work / 'monitor.db'}"
            config = work / "monitor.toml"
            config.write_text(
                args.config.read_text(encoding="utf-8").replace(url, copy_url), encoding="utf-8"
            )
            with open_store(copy_url).session() as s:
                s.execute(delete(Verdict))
                s.execute(delete(Assessment))
                s.commit()
            run = judge_copy(work, config, k, since)
            plain = load_settings(config)
            cut = {"embedded_top_k": k, "embedded_cut_above_claims": 0 if k else NO_CUT}
            cut_settings = plain.model_copy(update={"judge": plain.judge.model_copy(update=cut)})
            lists = triage_lists(copy_url, cut_settings, period)
        row = {"k": raw, **run, **compare(reference, lists), "load_avg": os.getloadavg()}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
