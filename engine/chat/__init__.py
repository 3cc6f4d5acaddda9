"""The chat client: one shared HTTP session and one CapacityLimiter per endpoint, errors classified in one place."""
