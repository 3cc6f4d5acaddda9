"""The recording gateway for framework runtimes (server.py: HTTP; session.py: one rollout attempt; translate.py:
request and reply shapes)."""
