"""``aggregate``: paired summaries of job results over optimizer seeds 0/1/2 (protocol 5.8 and 6).

discovery (find and read result.json, skip with reasons) -> summary (cells, bootstrap CI, McNemar, Holm)
-> tables (stdout TSV) / summary.json (cli) / plots (optional matplotlib).
"""

from engine.aggregate.cli import main
from engine.aggregate.discovery import JobResult, Skipped, find_results, load_results, parse_result
from engine.aggregate.summary import SUMMARY_SCHEMA, aggregate, summarize_cell
from engine.aggregate.tables import format_table

__all__ = ["SUMMARY_SCHEMA", "JobResult", "Skipped", "aggregate", "find_results", "format_table", "load_results",
           "main", "parse_result", "summarize_cell"]
