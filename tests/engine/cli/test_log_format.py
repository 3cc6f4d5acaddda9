"""`--log-format json` (a global option of every command): stderr carries only JSON lines, one object each.

Real subprocesses of `python -m engine`; every stderr line is parsed. The default stays the human text that the
other CLI tests grep."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.engine.cli.hostile import BFCL_SINGLE, engine, snapshot


def json_lines(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """Every stderr line as a JSON object (fails on any line that is not one)."""
    events = []
    for line in proc.stderr.splitlines():
        event = json.loads(line)
        assert isinstance(event, dict) and {"event", "level", "timestamp"} <= set(event), line
        events.append(event)
    return events


@pytest.mark.slow
def test_identity_job_emits_only_json_lines_with_the_banner(tmp_path: Path):
    proc = engine("job", "--cell", BFCL_SINGLE, "--method", "identity", "--seed", "0", "--out", str(tmp_path / "j"),
                  "--log-format", "json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = json_lines(proc)
    banner = [e for e in events if e.get("kind") == "simulated_endpoint"]
    assert len(banner) == 1 and "SIMULATED ENDPOINT" in banner[0]["event"] and banner[0]["level"] == "warning"
    assert any(e.get("kind") == "plan" for e in events)
    result = json.loads(proc.stdout)  # stdout: the one plain JSON result line, no log event
    assert result["endpoint_kind"] == "simulated" and "event" not in result


@pytest.mark.slow
def test_progress_lines_are_json_events_with_their_counts(tmp_path: Path):
    proc = engine("job", "--cell", BFCL_SINGLE, "--method", "gepa", "--budget", "30", "--allow-small-budget",
                  "--seed", "0", "--out", str(tmp_path / "j"), "--log-format=json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = json_lines(proc)
    progress = [e for e in events if e.get("kind") == "progress" and e.get("phase") == "optimize"]
    assert progress and progress[-1]["charged"] == 30 and progress[-1]["maximum"] == 30
    assert all(e["event"].startswith("progress: charged=") for e in progress)
    assert [e for e in events if e.get("kind") == "simulated_endpoint"]
    assert json.loads(proc.stdout)["charged"] == 30


@pytest.mark.slow
def test_default_is_the_human_text(tmp_path: Path):
    proc = engine("job", "--cell", BFCL_SINGLE, "--method", "identity", "--seed", "0", "--out", str(tmp_path / "j"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.splitlines()[0].startswith("SIMULATED ENDPOINT: no --task-endpoint given")
    assert not proc.stderr.lstrip().startswith("{")


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ("job", "--cell", BFCL_SINGLE, "--method", "identity", "--budget", "0"),
    ("job", "--cell", "task=nope,topology=single", "--method", "identity"),
    ("run", "--cell", BFCL_SINGLE, "--split", "nope"),
    ("serve-sim", "--port", "99999"),
    ("aggregate", "--bootstrap", "x"),
    ("card", "export"),
    ("sandbox", "run"),
    ("no-such-command",),
])
def test_refusals_are_one_json_line_and_write_nothing(tmp_path: Path, args: tuple[str, ...]):
    out = tmp_path / "out"
    extra = ("--out", str(out)) if args[0] in ("job", "run") else ()
    before = snapshot(tmp_path)
    proc = engine("--log-format", "json", *args, *extra)
    assert proc.returncode == 2, proc.stderr[-3000:]
    events = json_lines(proc)
    assert len(events) == 1 and events[0]["level"] == "error" and "error" in events[0]["event"], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert snapshot(tmp_path) == before


def test_an_unknown_log_format_is_a_usage_error():
    proc = engine("sandbox", "check", "--log-format", "xml")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --log-format must be one of console, json"), lines


@pytest.mark.slow
def test_every_command_accepts_the_option():
    for command in ("job", "run", "serve-sim", "aggregate", "card", "sandbox"):
        proc = engine(command, "--help", "--log-format", "json")
        assert proc.returncode == 0 and "usage:" in proc.stdout, (command, proc.stderr)
        assert proc.stderr == "", (command, proc.stderr)


def test_stdlib_logging_and_python_warnings_become_json_lines(capsys: pytest.CaptureFixture[str]):
    """Libraries that log through stdlib logging (aiohttp, asyncio) never put a stray text line on stderr."""
    import logging
    import warnings

    from engine import log as logs

    logs.configure("json")
    try:
        logging.getLogger("aiohttp.server").error("handler failed: %s", "boom")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library warning", UserWarning, stacklevel=1)
        logs.get_logger("engine.test").info("progress: charged=10/600", charged=10)
    finally:
        restore_console_logging()
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(e["logger_name"], e["level"]) for e in events] == [
        ("aiohttp.server", "error"), ("py.warnings", "warning"), ("engine.test", "info")]
    assert events[0]["event"] == "handler failed: boom" and events[2]["charged"] == 10


@pytest.mark.parametrize("quiet", [False, True])
def test_framework_loggers_go_through_the_engine_handler_and_quiet_drops_them(capsys: pytest.CaptureFixture[str],
                                                                            quiet: bool):
    """AutoGen logs `Error processing publish message` (with a traceback) per failed agent message, CrewAI alike:
    a JSON event each, or nothing at all under --quiet; the engine's own warnings stay."""
    import logging

    from engine import log as logs

    logs.configure("json", quiet=quiet)
    try:
        for name in ("autogen_core", "crewai.agent", "openai.agents"):
            try:
                raise RuntimeError("upstream 503")
            except RuntimeError:
                logging.getLogger(name).error("Error processing publish message for solver", exc_info=True)
        logging.getLogger("autogen_corefake").warning("not a framework logger")
        logs.get_logger("engine.test").warning("engine warning")
    finally:
        restore_console_logging()
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    framework = [] if quiet else ["autogen_core", "crewai.agent", "openai.agents"]
    assert [e["logger_name"] for e in events] == [*framework, "autogen_corefake", "engine.test"]


def test_a_framework_record_on_the_root_logger_is_the_frameworks(capsys: pytest.CaptureFixture[str]):
    """CrewAI logs `OpenAI API call failed: ...` with `logging.error`, i.e. on the ROOT logger: its source file
    makes it a framework record all the same (dropped under --quiet); an engine record on the root logger stays."""
    import logging

    from engine import log as logs

    def root_record(path: str) -> logging.LogRecord:
        return logging.makeLogRecord({"name": "root", "levelno": logging.ERROR, "levelname": "ERROR",
                                      "msg": "OpenAI API call failed: 502", "pathname": path})

    crewai = "/venv/lib/python3.11/site-packages/crewai/llms/providers/openai/completion.py"
    assert logs.is_framework_record("root", crewai)
    assert not logs.is_framework_record("root", "/work/engine/job/run_job.py")
    assert not logs.is_framework_record("root", "/venv/lib/python3.11/site-packages/aiohttp/web.py")
    logs.configure("json", quiet=True)
    try:
        logging.getLogger().handle(root_record(crewai))
        logging.getLogger().handle(root_record("/work/engine/job/run_job.py"))
    finally:
        restore_console_logging()
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert len(events) == 1 and events[0]["event"] == "OpenAI API call failed: 502"


def test_the_console_shows_a_frameworks_first_records_then_one_line(capsys: pytest.CaptureFixture[str]):
    """Hundreds of per-failure lines of a framework under faults: the console shows the first FRAMEWORK_LINES of
    each framework, then one line naming it; JSON keeps every record (a machine filters by logger_name)."""
    import logging

    from engine import log as logs

    logs.configure("console")
    try:
        for i in range(50):
            logging.getLogger("autogen_core").error("Error processing publish message for manager %d", i)
            logging.getLogger("crewai.agent").error("agent failed %d", i)
        logging.getLogger("aiohttp.client").warning("not a framework")
    finally:
        restore_console_logging()
    lines = capsys.readouterr().err.splitlines()
    n = logs.FRAMEWORK_LINES
    assert sum("Error processing publish message" in line for line in lines) == n
    assert sum("agent failed" in line for line in lines) == n
    notices = [line for line in lines if "further log records of this framework are not shown" in line]
    assert [line.split(":")[0] for line in notices] == ["autogen_core", "crewai"]
    assert lines[-1] == "not a framework" and len(lines) == 2 * (n + 1) + 1
    logs.configure("json")
    try:
        for i in range(20):
            logging.getLogger("autogen_core").error("Error processing publish message for manager %d", i)
    finally:
        restore_console_logging()
    assert len(capsys.readouterr().err.splitlines()) == 20


def restore_console_logging() -> None:
    """Undo logs.configure("json"): the console renderer, no engine handler on the root logger, warnings uncaptured."""
    import logging

    from engine import log as logs

    logs.configure("console", route_stdlib=False)
    logging.getLogger().handlers[:] = [h for h in logging.getLogger().handlers if type(h).__name__ != "_EngineHandler"]
    logging.captureWarnings(False)
