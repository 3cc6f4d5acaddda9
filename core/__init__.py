"""Pure vocabulary of the engine: models, errors, hashing, seeds, ledger. No I/O, imports nothing of ours."""
