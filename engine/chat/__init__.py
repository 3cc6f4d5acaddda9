"""The chat client: one shared HTTP session and one slot limiter (engine.chat.slots) per endpoint, errors
classified in one place."""
