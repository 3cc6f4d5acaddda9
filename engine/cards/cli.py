"""``python -m engine card COMMAND``: rollout cards.

    card export RUN_DIR|CARD --out DIR [--format jsonl|parquet] [--zip] [--redact STREAM.FIELD.PATH[=REASON] ...]
                                  [--release-class C] [--license L]
    card import PARQUET_DIR --out CARD [--zip]   back from Parquet to the JSONL card, validated
    card validate CARD [--previous OLD_CARD] [--json]
                                       CARD: a bundle directory or .zip; exit 0 only when no error is found
    card rescore CARD --rule NAME      recompute a number from the card alone; records the rule and drops manifest
    card rules                         list the registered reporting rules
    card verify CARD --rescore [--data-dir DIR] [dataset options]
                                       re-run the protocol scorer on every recorded final output; exit 1 if any differ
    card schema --out DIR              JSON Schemas of every stream, the manifest, registry, drops and namespaces
    card view CARD --out DIR           a static, self-contained HTML viewer (DIR/index.html)

Usage errors exit 2 with one line on stderr; engine errors propagate to the top-level CLI.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.cards.format.model import RELEASE_CLASSES
from engine.cards.format.problems import errors
from core.errors import UsageError
from engine.cards.bundle import Bundle
from engine.cards.export import Redaction, export_card
from engine.cards.rescore import apply_rule, format_outcome, run_rule
from engine.cards.rule_table import all_rules
from engine.cards.parquet import export_parquet, import_parquet
from engine.cards.schema import write_schemas
from engine.cards.validate import validate_bundle, validate_path
from engine.cards.verify import card_task, rescore
from engine.cards.view import write_view
from engine.benchmark_setup import add_dataset_options, configure_benchmark, dataset_options
from engine.args import ParseError, StrictParser, check_path_names
from engine.store.check import check_store_file
from engine.log import get_logger

log = get_logger("engine.cards")

PROG = "python -m engine card"


def build_parser() -> argparse.ArgumentParser:
    parser = StrictParser(prog=PROG, description="Export, validate, re-score, convert and view rollout cards (format 1.x).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=StrictParser)  # no abbreviations in the subcommands either
    sub.required = True
    ex = sub.add_parser("export", help="write the rollout-card bundle of a job directory",
                        description="Write RUN_DIR/card.sqlite (+ job.json, result.json) as a rollout-card bundle: "
                                    "manifest.json, five JSONL streams, bundles.jsonl, blobs/, reporting_rules.json, "
                                    "drops/. With --format parquet (extra `parquet`), write one Parquet file per "
                                    "stream beside the manifest instead; the source may then also be a card.")
    ex.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    ex.add_argument("--out", type=Path, required=True, metavar="DIR", help="bundle directory (or .zip with --zip)")
    ex.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl", help="card layout (default jsonl)")
    ex.add_argument("--zip", action="store_true", help="write one deterministic .zip instead of a directory")
    ex.add_argument("--redact", action="append", default=[], metavar="FIELD_PATH[=REASON]",
                    help="remove a field, e.g. events.payload.request.messages=pii (repeatable; reasons: pii, "
                         "license, size, source_policy, unavailable_in_source, safety)")
    ex.add_argument("--release-class", choices=RELEASE_CLASSES, default=None,
                    help="release class (default: full_trace, or redacted_trace when anything was removed)")
    ex.add_argument("--license", default=None, help="license of the released card, e.g. CC-BY-4.0")
    va = sub.add_parser("validate", help="check a bundle against the format (spec 4.8)",
                        description="Print one line per problem (CODE file:line: message); exit 0 only when valid.")
    va.add_argument("card", type=Path, metavar="CARD")
    va.add_argument("--previous", type=Path, default=None, metavar="OLD_CARD",
                    help="an earlier card of the same run: its events/annotations/mutations must be byte prefixes")
    va.add_argument("--json", action="store_true", help="print the problems as a JSON list")
    rs = sub.add_parser("rescore", help="recompute a reported number under a reporting rule",
                        description="Recompute a number from the card alone; print it with its denominator and "
                                    "failure counts; record the rule entry and its drops manifest in the card.")
    rs.add_argument("card", type=Path, metavar="CARD")
    rs.add_argument("--rule", required=True, metavar="NAME", help="a registered rule (see `card rules`)")
    rs.add_argument("--dry-run", action="store_true", help="print only; do not write into the card")
    rs.add_argument("--json", action="store_true", help="print the rule entry as JSON")
    sub.add_parser("rules", help="list the registered reporting rules", description="List the reporting rules.")
    vf = sub.add_parser("verify", help="re-run the benchmark's scorer on the recorded outputs",
                        description="With --rescore: load each rollout's row from the dataset (the job's --data-dir "
                                    "and dataset options), score its recorded final output under this engine's "
                                    "protocol scorer, and print every score that differs; exit 1 if any does.")
    vf.add_argument("card", type=Path, metavar="CARD")
    vf.add_argument("--rescore", action="store_true", required=True, help="re-score every recorded final output")
    vf.add_argument("--data-dir", default=None, metavar="DIR", help="the dataset directory the job read")
    add_dataset_options(vf)
    im = sub.add_parser("import", help="rebuild the JSONL card from a Parquet export",
                        description="Rebuild every JSONL stream from PARQUET_DIR, check each against the manifest's "
                                    "sha256, validate the card, and write it only when valid.")
    im.add_argument("src", type=Path, metavar="PARQUET_DIR")
    im.add_argument("--out", type=Path, required=True, metavar="CARD")
    im.add_argument("--zip", action="store_true", help="write a .zip")
    sc = sub.add_parser("schema", help="write JSON Schemas of the card format",
                        description="Write one JSON Schema per stream row, the manifest, the registry, a drops "
                                    "manifest, bundle records and each declared annotation namespace's payload.")
    sc.add_argument("--out", type=Path, required=True, metavar="DIR")
    vw = sub.add_parser("view", help="write a static HTML viewer of a card",
                        description="Write DIR/index.html: one self-contained page (no server, no network) showing "
                                    "phases, learning curve, rollouts, agents, calls, rules, drops and redactions.")
    vw.add_argument("card", type=Path, metavar="CARD", help="a card directory or .zip, or a Parquet export")
    vw.add_argument("--out", type=Path, required=True, metavar="DIR")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except ParseError as exc:
        log.error(f"{exc.prog}: error: {exc.message}")
        return 2
    try:
        return _COMMANDS[args.command](args)
    except UsageError as exc:
        log.error(f"{PROG} {args.command}: error: {exc}")
        return 2


def _is_card(path: Path) -> bool:
    return (path / "manifest.json").is_file() or (path.is_file() and path.suffix == ".zip")


def _export(args: argparse.Namespace) -> int:
    redactions = [Redaction.parse(text) for text in args.redact]
    check_path_names(args.out, "--out")
    store = args.run_dir / "card.sqlite"
    if store.is_file():  # a damaged store is refused before the reader opens it (read-only checks)
        check_store_file(store, writable=False)
    if args.format == "parquet":
        if args.zip:
            raise UsageError("--zip applies to --format jsonl; a Parquet export is a directory")
        if _is_card(args.run_dir):
            if redactions or args.release_class or args.license:
                raise UsageError("--redact/--release-class/--license apply when exporting a job directory, not a card")
            card = Bundle.load(args.run_dir)
        else:
            card = export_card(args.run_dir, redactions=redactions, release_class=args.release_class,
                               license=args.license)
        index = json.loads(export_parquet(card, args.out).files["parquet.json"])["tables"]
        counts = ", ".join(f"{table} {entry['rows']} rows" for table, entry in index.items())
        print(f"parquet -> {args.out} ({counts})")
        return 0
    bundle = export_card(args.run_dir, args.out, as_zip=args.zip, redactions=redactions,
                         release_class=args.release_class, license=args.license)
    manifest = json.loads(bundle.files["manifest.json"])
    where = args.out if not args.zip or args.out.suffix == ".zip" else args.out.with_name(args.out.name + ".zip")
    print(f"card {manifest['card_id']} -> {where} ({sum(e['rows'] for e in manifest['streams'].values())} rows, "
          f"{manifest['blobs']['count']} blobs, release class {manifest['release_scope']['class']})")
    return 0


def _validate(args: argparse.Namespace) -> int:
    problems = validate_path(args.card, args.previous)
    if args.json:
        print(json.dumps([{"code": p.code, "location": p.location, "message": p.message,
                           "severity": p.severity.value} for p in problems], indent=1))
    else:
        for p in problems:
            print(p.line())
        bad = errors(problems)
        print(f"{args.card}: {'valid' if not bad else 'INVALID'} ({len(bad)} error(s), "
              f"{len(problems) - len(bad)} warning(s))")
    return 1 if errors(problems) else 0


def _rescore(args: argparse.Namespace) -> int:
    bundle = Bundle.load(args.card)
    outcome = run_rule(bundle, args.rule) if args.dry_run else apply_rule(bundle, args.rule)
    if not args.dry_run:
        bundle.save()
    if args.json:
        print(json.dumps(outcome.entry.model_dump(mode="json"), indent=1, sort_keys=True))
    else:
        print("\n".join(format_outcome(outcome)))
    return 0 if outcome.result.status == "ok" else 1


def _verify(args: argparse.Namespace) -> int:
    from benchmarks.registry import get_benchmark

    bundle = Bundle.load(args.card)
    bench = configure_benchmark(get_benchmark(card_task(bundle)), dataset_options(args), args.data_dir, run=False)
    report = rescore(bundle, bench, args.data_dir)
    print("\n".join(report.lines()))
    return 1 if report.differences else 0


def _rules(args: argparse.Namespace) -> int:
    for rule in all_rules():
        print(f"{rule.rule_id}\t{rule.kind}\t{rule.metric}\t{rule.description}")
    return 0


def _import(args: argparse.Namespace) -> int:
    card = import_parquet(args.src)
    problems = validate_bundle(card)
    for p in problems:
        print(p.line())
    if errors(problems):
        log.error(f"{args.src}: the rebuilt card is INVALID; nothing written")
        return 1
    where = card.write_zip(args.out if args.out.suffix == ".zip" else args.out.with_name(args.out.name + ".zip")) \
        if args.zip else card.write_dir(args.out)
    print(f"card -> {where} (streams identical to the manifest's hashes; valid)")
    return 0


def _schema(args: argparse.Namespace) -> int:
    written = write_schemas(args.out)
    print(f"{len(written)} JSON Schemas -> {args.out}")
    return 0


def _view(args: argparse.Namespace) -> int:
    parquet = args.card.is_dir() and (args.card / "parquet.json").is_file()
    page = write_view(import_parquet(args.card) if parquet else Bundle.load(args.card), args.out)
    print(f"viewer -> {page}")
    return 0


_COMMANDS = {"export": _export, "validate": _validate, "rescore": _rescore, "verify": _verify, "rules": _rules,
             "import": _import, "schema": _schema, "view": _view}
