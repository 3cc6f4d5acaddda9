"""A worker's channel to its parent: a write after the parent is gone (kill -9 lands between two progress
snapshots, before the worker has read the end of its stdin) raises nothing into the reporting job -- it once became
that job's `program_failure` in optimization.json, recorded for good, so the resumed sweep failed the job."""

from __future__ import annotations

import json
import os

from engine.sweep.worker import ParentChannel


def test_a_write_to_a_gone_parent_stops_the_worker_and_raises_nothing():
    read, write = os.pipe()
    out = os.fdopen(write, "wb", buffering=0)
    channel = ParentChannel(out)
    stopped: list[str] = []
    channel.on_gone = lambda: stopped.append("cancel")
    channel.emit({"key": "k", "progress": {"done": 1}})
    assert json.loads(os.read(read, 1 << 16)) == {"key": "k", "progress": {"done": 1}}
    os.close(read)  # the parent is gone
    channel.emit({"key": "k", "progress": {"done": 2}})  # EPIPE: no exception reaches the job
    channel.emit({"key": "k", "finished": {}})
    assert channel.gone and stopped == ["cancel"], "the worker stops its jobs once, as at the end of stdin"
    out.close()


def test_a_closed_channel_is_a_gone_parent_too():
    read, write = os.pipe()
    out = os.fdopen(write, "wb", buffering=0)
    channel = ParentChannel(out)
    stopped: list[bool] = []
    channel.on_gone = lambda: stopped.append(True)
    out.close()
    os.close(read)
    channel.emit({"key": "k", "error": "x"})
    assert channel.gone and stopped == [True]
