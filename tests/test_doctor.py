"""`monitor init` and `monitor doctor` find a local OpenAI-compatible server and write its judge settings.

Against a real llama.cpp server no judge test asks meanwhile (tests/llama_server.py), on the port it
listens on (`--port`), and the scriptable server for what llama-cpp-python does not say (several models,
slots).
"""

from __future__ import annotations

import re
import socket
import time
import tomllib
from pathlib import Path
from urllib.parse import urlparse

from llama_server import LlamaServer, quiet_llama_server  # noqa: F401 - the session fixture
from llm_server import Reply, ScriptedLLM
from ops_helpers import bare_monitor

from monitor.config import MAX_CONCURRENCY, load_settings
from monitor.llm.servers import LOCAL_TIMEOUT_SECONDS, MAX_SLOTS, find_servers
from monitor.scaffold import render_config, update_config

SECRET = "sk-doctor-test-never-printed"


def _port(url: str) -> str:
    return str(urlparse(url).port)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _llm_section(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text())["llm"]


def test_init_finds_the_llama_server_and_writes_its_judge_settings(
    quiet_llama_server: LlamaServer, tmp_path: Path  # noqa: F811
) -> None:
    done = bare_monitor("init", "--no-import", "--port", _port(quiet_llama_server.url), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"at {quiet_llama_server.url}: smollm2" in done.stdout, done.stdout
    assert "llm.model = 'smollm2'" in done.stdout
    written = tmp_path / "monitor.toml"
    assert _llm_section(written) == {
        "base_url": quiet_llama_server.url,
        "model": "smollm2",
        "concurrency": 1,
        "timeout_seconds": LOCAL_TIMEOUT_SECONDS,
    }
    why = f"# found by `monitor init`: OpenAI-compatible at {quiet_llama_server.url}"
    assert f"{why} (default: 4)\nconcurrency = 1" in written.read_text()
    settings = load_settings(written)
    assert settings.judge_provider() == "openai" and settings.llm.concurrency == 1
    # No server on the ports asked: the file is the commented defaults, the embedded judge in force.
    other = tmp_path / "other"
    other.mkdir()
    quiet = bare_monitor("init", "--no-import", "--port", str(_free_port()), cwd=other)
    assert quiet.returncode == 0, quiet.stderr
    assert "local LLM servers: none answering" in quiet.stdout
    assert (other / "monitor.toml").read_text() == render_config()


def test_doctor_reports_and_writes_the_llama_servers_settings_keeping_comments(
    quiet_llama_server: LlamaServer, tmp_path: Path  # noqa: F811
) -> None:
    port = _port(quiet_llama_server.url)
    assert bare_monitor("init", "--no-import", "--no-detect", cwd=tmp_path).returncode == 0
    config = tmp_path / "monitor.toml"
    before = config.read_text() + "\n# my own note, kept\n"
    config.write_text(before)
    seen = bare_monitor("doctor", "--port", port, cwd=tmp_path, OPENAI_API_KEY=SECRET)
    assert seen.returncode == 0, seen.stderr
    out = seen.stdout
    assert "config: monitor.toml" in out
    assert "database: sqlite:///monitor.db: reachable; 0 active claim(s), 0 paper(s) stored" in out
    # A key alone makes the openai judge the one in force, against the OpenAI API; the key is never shown.
    assert "judge: openai, model gpt-4o-mini at the OpenAI API" in out and "API key: set" in out
    assert SECRET not in out + seen.stderr
    assert f"local LLM server: OpenAI-compatible at {quiet_llama_server.url}: smollm2" in out
    assert "judge settings for it" not in out  # the OpenAI API is the user's choice
    asked = bare_monitor("doctor", "--port", port, cwd=tmp_path)
    assert "judge settings for it: llm.base_url" in asked.stdout
    assert "monitor doctor --write" in asked.stdout
    assert config.read_text() == before  # not a terminal and no --write: nothing written
    wrote = bare_monitor("doctor", "--port", port, "--write", cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    assert "judge: the embedded model" in wrote.stdout and "API key: not set" in wrote.stdout
    assert "wrote the judge settings into monitor.toml" in wrote.stdout
    text = config.read_text()
    assert _llm_section(config) == {
        "base_url": quiet_llama_server.url,
        "model": "smollm2",
        "concurrency": 1,
        "timeout_seconds": LOCAL_TIMEOUT_SECONDS,
    }
    # Every line of the file is still there, comments and commented defaults included.
    assert [line for line in before.splitlines() if line not in text.splitlines()] == []
    assert load_settings(config).judge_provider() == "openai"
    again = bare_monitor("doctor", "--port", port, cwd=tmp_path)
    assert f"judge: openai, model smollm2 at {quiet_llama_server.url}" in again.stdout
    assert "the server answers and serves the model" in again.stdout
    assert "judge settings for it" not in again.stdout  # nothing left to propose


def test_several_models_pick_a_chat_model_and_llama_cpp_slots_set_the_concurrency(tmp_path: Path) -> None:
    with ScriptedLLM() as llm:
        models = ["nomic-embed-text:latest", "llama3.1:8b", "qwen2.5:7b-instruct"]
        llm.routes["/v1/models"] = Reply(body={"object": "list", "data": [{"id": m} for m in models]})
        llm.routes["/props"] = Reply(body={"total_slots": 3})
        port = int(_port(llm.url))
        [server] = find_servers([port]).servers
        assert server.model == "qwen2.5:7b-instruct"
        assert server.other_models == ["nomic-embed-text:latest", "llama3.1:8b"]
        assert server.llm_settings()["concurrency"] == 3
        done = bare_monitor("doctor", "--port", str(port), "--write", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "other models it serves: nomic-embed-text:latest, llama3.1:8b" in done.stdout
        assert "3 slot(s)" in done.stdout
        # No monitor.toml yet: the whole commented file, with the judge's settings set.
        assert _llm_section(tmp_path / "monitor.toml") == {
            "base_url": llm.url,
            "model": "qwen2.5:7b-instruct",
            "concurrency": 3,
            "timeout_seconds": LOCAL_TIMEOUT_SECONDS,
        }


def test_a_configured_server_that_is_gone_is_named_and_nothing_listening_costs_little(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    config = tmp_path / "monitor.toml"
    config.write_text(f'[llm]\nbase_url = "{dead}"  # my server\nmodel = "qwen"\n')
    started = time.monotonic()
    done = bare_monitor("doctor", "--port", str(_free_port()), "--port", str(_free_port()), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"the server at {dead} does not answer" in done.stdout
    assert "database: sqlite:///monitor.db: no database at" in done.stdout
    assert not (tmp_path / "monitor.db").exists()  # a doctor never creates the database
    assert time.monotonic() - started < 20
    started = time.monotonic()
    assert find_servers([_free_port(), _free_port()]).servers == []
    assert time.monotonic() - started < 1.5


def test_update_config_sets_keys_in_place_and_refuses_a_result_that_would_not_load(tmp_path: Path) -> None:
    config = tmp_path / "monitor.toml"
    config.write_text('# mine\n[llm]\nmodel = "old"  # keep this comment\n\n[report]\nperiod = "month"\n')
    update_config(config, {"llm": {"model": "new", "concurrency": 1}}, "set by a test")
    text = config.read_text()
    assert 'model = "new"  # keep this comment' in text and text.startswith("# mine\n")
    assert re.search(r"# set by a test\nconcurrency = 1\n", text)
    assert tomllib.loads(text)["report"] == {"period": "month"}
    before = config.read_text()
    try:
        update_config(config, {"llm": {"concurrency": "many"}}, "bad")
    except Exception as exc:  # noqa: BLE001 - the type is checked below
        assert type(exc).__name__ == "ConfigError" and "would not load" in str(exc)
    else:
        raise AssertionError("an invalid value was written")
    assert config.read_text() == before


def test_a_servers_slot_count_is_bounded_as_the_setting_is(tmp_path: Path) -> None:
    """`/props` said 100000000 slots and `init` wrote it as `llm.concurrency` (issue 33.5): now the
    proposal is capped (MAX_SLOTS, 32) below the setting's own bound (256): the file `init` writes loads."""
    with ScriptedLLM() as llm:
        llm.routes["/v1/models"] = Reply(body={"object": "list", "data": [{"id": "qwen2.5:7b-instruct"}]})
        llm.routes["/props"] = Reply(body={"total_slots": 100_000_000})
        port = str(_port(llm.url))
        [server] = find_servers([int(port)]).servers
        assert server.slots == MAX_CONCURRENCY  # what the server said, bounded as the setting is
        assert server.llm_settings()["concurrency"] == MAX_SLOTS == 32
        done = bare_monitor("init", "--no-import", "--port", port, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert _llm_section(tmp_path / "monitor.toml")["concurrency"] == 32
        assert load_settings(tmp_path / "monitor.toml").llm.concurrency == 32
