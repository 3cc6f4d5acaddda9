"""Rollout cards, I/O part: export a job's card.sqlite as a rollout-card bundle (spec 4.1), validate a bundle
(spec 4.8), read it through an access-logging typed reader (4.7), and re-score it under registered reporting
rules that publish drops manifests (4.5, 4.6). The pure checks and models live in `core.cards`."""
