"""engine/args.py: strict option types (in-process, fast) and the parser's no-abbreviation rule."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from core.errors import UsageError
from engine.chat.auth import check_endpoint_url, redacted_url
from engine.args import StrictParser, check_out_directory, check_out_file, int_in, positive_float
from engine.job.config import check_cell_text

NOT_ASCII_INTS = ["٤", "４", "1_0", " 5", "5 ", "+5", "0x10", "1e3", "", "5.0", "٣٢", "𝟓", "²"]
NOT_FINITE = ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "1_0.5", "٣.٥", "", "0x1p3", " 1"]


@pytest.mark.parametrize("text", NOT_ASCII_INTS)
def test_int_rejects_everything_python_would_stretch(text: str):
    with pytest.raises(UsageError, match="ASCII digits"):
        int_in("--n")(text)


@pytest.mark.parametrize("text,low,high,ok", [("0", 1, None, False), ("-1", 1, None, False), ("1", 1, None, True),
                                              ("600", 1, 600, True), ("601", 1, 600, False), ("65535", 0, 65535, True)])
def test_int_bounds(text: str, low, high, ok: bool):
    if ok:
        assert int_in("--n", low, high)(text) == int(text)
    else:
        with pytest.raises(UsageError, match="--n must be"):
            int_in("--n", low, high)(text)


@pytest.mark.parametrize("text", NOT_FINITE)
def test_float_rejects_non_finite_and_non_ascii(text: str):
    with pytest.raises(UsageError):
        positive_float("--t")(text)


@pytest.mark.parametrize("text,allow_zero,ok", [("0", False, False), ("0", True, True), ("-0.5", True, False),
                                                ("0.25", False, True), (".5", False, True), ("1e3", False, True)])
def test_float_sign(text: str, allow_zero: bool, ok: bool):
    if ok:
        value = positive_float("--t", allow_zero=allow_zero)(text)
        assert math.isfinite(value) and value == float(text)
    else:
        with pytest.raises(UsageError):
            positive_float("--t", allow_zero=allow_zero)(text)


def test_parser_has_no_abbreviations_and_errors_are_usage_errors():
    parser = StrictParser(prog="p")
    parser.add_argument("--budget", type=int_in("--budget", 1))
    assert parser.parse_args(["--budget", "5"]).budget == 5
    with pytest.raises(UsageError, match="unrecognized arguments: --bud"):
        parser.parse_args(["--bud", "5"])


@pytest.mark.parametrize("cell", ["task=bfcl,topology=independent,team_size=٤",
                                  "task=bfcl,topology=independent,team_size=0_4",
                                  "task=bfcl,topology=independent,team_size=+4",
                                  "task=bfcl,topology=single\n", "task=bfcl,topology=single\x00"])
def test_cell_text_is_ascii_with_ascii_team_size(cell: str):
    with pytest.raises(UsageError):
        check_cell_text(cell)


def test_out_checks_do_not_create_anything(tmp_path: Path):
    (tmp_path / "f").write_text("x")
    check_out_directory(tmp_path / "new" / "deeper")
    check_out_file(tmp_path / "new" / "p.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]
    for bad in (tmp_path / "f", tmp_path / "f" / "x", Path("/dev/null"), tmp_path / ("n" * 256)):
        with pytest.raises(UsageError):
            check_out_directory(bad)
    for bad in (tmp_path, Path("/dev/null"), tmp_path / ("n" * 256)):
        with pytest.raises(UsageError):
            check_out_file(bad)


@pytest.mark.parametrize("url", ["http://u:secretpw@h/v1", "https://secretpw@h:8000/v1",
                                 "http://u:secretpw@[::1]:1/v1"])
def test_credentials_in_urls_are_refused_and_redacted(url: str):
    with pytest.raises(UsageError) as info:
        check_endpoint_url(url, "--task-endpoint")
    assert "secretpw" not in str(info.value) and "***@" in str(info.value)
    assert "secretpw" not in redacted_url(url)
