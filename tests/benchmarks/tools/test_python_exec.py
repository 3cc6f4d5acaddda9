import anyio

from benchmarks.tools import PYTHON_EXEC_TOOL, python_exec, python_exec_async


def test_runs_program_with_stdin():
    out = python_exec("print(int(input()) * 2)", "21\n")
    assert out.startswith("status: exit code 0") and "42" in out


def test_reports_errors_and_stderr():
    out = python_exec("raise ValueError('boom')")
    assert "status: exit code 1" in out and "ValueError: boom" in out and "stdout:\n(empty)" in out


def test_async_and_empty_code():
    out = anyio.run(python_exec_async, "print('hi')", "")
    assert "hi" in out
    assert python_exec("   ").startswith("Error:")


def test_schema_shape():
    fn = PYTHON_EXEC_TOOL["function"]
    assert fn["name"] == "python_exec" and fn["parameters"]["required"] == ["code"]
    assert set(fn["parameters"]["properties"]) == {"code", "stdin"}
