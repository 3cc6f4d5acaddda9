"""A job: identity, optimize, final validation (sealed selection), paired test, result."""
