from benchmarks.sandbox.codeblocks import extract_python, fenced_blocks, normalize_program
from benchmarks.sandbox.programs import RESULT_MARKER, parse_functional_stdout


def test_last_parsing_python_block_wins():
    text = "```python\nprint(1)\n```\ntext\n```python\nprint(2)\n```\n"
    assert extract_python(text).code == "print(2)\n"


def test_python_labels_are_preferred_over_unlabelled_blocks():
    text = "```python\nx = 1\n```\n```\ny = 2\n```\n"
    assert extract_python(text).code == "x = 1\n"


def test_unparsable_last_block_falls_back_to_an_earlier_one():
    text = "```python\nprint('ok')\n```\n```python\ndef f(:\n```\n"
    assert extract_python(text).code == "print('ok')\n"


def test_json_blocks_are_skipped():
    text = "```python\nprint(3)\n```\n```\n[1, 2, 3]\n```\n```json\n{\"a\": 1}\n```\n"
    assert extract_python(text).code == "print(3)\n"


def test_problems_are_named():
    assert extract_python("no code here").problem == "no_code_block"
    assert extract_python(None).problem == "no_code_block"
    bad = extract_python("```python\ndef f(:\n    pass\n```")
    assert bad.code is None and bad.problem == "syntax_error" and "line 1" in bad.detail


def test_fenced_blocks_keep_labels():
    assert [b.label for b in fenced_blocks("```Python\na\n```\n```diff\nb\n```")] == ["python", "diff"]


def test_normalize_program():
    assert normalize_program("x = 1   \n\n\ny = 2\n") == "x = 1\ny = 2"
    assert normalize_program(None) is None and normalize_program("\n \n") is None


def test_functional_stdout_parsing():
    assert parse_functional_stdout(f"noise\n{RESULT_MARKER}[1, 2]\n") == (True, [1, 2])
    assert parse_functional_stdout("nothing") == (False, None)
