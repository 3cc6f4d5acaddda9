"""Rollout cards, I/O part: export a job's card.sqlite as a rollout-card bundle (spec 4.1; `export`, with redaction
that follows removed values and bundle records), validate a bundle (spec 4.8 plus semantic integrity checks and
the recomputation of every recorded rule: `validate`, `recompute`), read it through an access-logging typed reader
(4.7), re-score it under registered reporting rules that publish drops manifests (4.5, 4.6), convert it to and
from Parquet (`parquet`), publish its JSON Schemas (`schema`) and render it as a static HTML page (`view`). The
pure checks and models live in `engine.cards.format`."""
