"""The store's writer: batches commit in FIFO order on the event loop's thread, a failing op is undone alone and
handed its error, a queued op commits whatever happens to its waiter, a full disk is an error to the producer, not a
lost row, and checkpoints run on a thread of their own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from core.vocabulary import Actor, NodeStatus
from engine.store import Store

pytestmark = pytest.mark.anyio


def _node(store: Store, node_id: str):
    return lambda conn: store.op_node(conn, node_id=node_id, parent_id=None, instance_key=node_id, task_key="t",
                                      status=NodeStatus.RUNNING, worker_key=None, level=1, actor=Actor.RUNNER)


def _rows(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def test_a_failing_op_is_undone_alone_and_the_mutation_log_stays_gapless(tmp_path: Path):
    path = tmp_path / "card.sqlite"
    async with Store(path, "run") as store:
        def boom(conn: sqlite3.Connection) -> None:
            store.op_node(conn, node_id="bad", parent_id=None, instance_key="bad", task_key="t",
                          status=NodeStatus.RUNNING, worker_key=None, level=1, actor=Actor.RUNNER)
            raise ValueError("op failed after writing")

        # queued together, so they land in one batch: the optimistic pass fails and the batch runs op by op
        commits = [store.submit(_node(store, "a")), store.submit(boom), store.submit(_node(store, "b"))]
        assert await commits[0] is True
        with pytest.raises(ValueError, match="op failed after writing"):
            await commits[1]
        assert await commits[2] is True
        assert await store.add_node(node_id="c", parent_id=None, instance_key="c", task_key="t",
                                    status=NodeStatus.RUNNING, worker_key=None, level=1, actor=Actor.RUNNER)
    assert _rows(path, "SELECT node_id FROM nodes ORDER BY node_id") == [("a",), ("b",), ("c",)]
    sequences = [s for (s,) in _rows(path, "SELECT sequence FROM mutations ORDER BY sequence")]
    assert sequences == list(range(len(sequences))) and len(sequences) == 3  # no gap where "bad" was undone


async def test_awaiting_a_later_commit_means_every_earlier_op_is_durable(tmp_path: Path):
    path = tmp_path / "card.sqlite"
    async with Store(path, "run") as store:
        for i in range(50):
            store.submit(_node(store, f"n{i:02d}"))  # not awaited
        await store.submit(_node(store, "last"))
        assert len(_rows(path, "SELECT node_id FROM nodes")) == 51  # read by another connection: committed


async def test_a_queued_op_commits_even_when_its_waiter_is_cancelled(tmp_path: Path):
    path = tmp_path / "card.sqlite"
    async with Store(path, "run") as store:
        with anyio.move_on_after(0):  # cancelled before the commit can be awaited
            await store.submit(_node(store, "orphan"))
    assert _rows(path, "SELECT node_id FROM nodes") == [("orphan",)]


async def test_a_full_disk_is_the_producers_error_and_the_writer_keeps_serving(tmp_path: Path):
    path = tmp_path / "card.sqlite"
    async with Store(path, "run") as store:
        await store.submit(_node(store, "before"))
        pages = _rows(path, "PRAGMA page_count")[0][0]
        await store.write(lambda conn: conn.execute(f"PRAGMA max_page_count={pages + 1}"))
        big = "x" * 20000

        def fill(conn: sqlite3.Connection) -> None:
            for i in range(20):
                conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (f"fill{i}", big))

        with pytest.raises(sqlite3.OperationalError, match="full"):
            await store.write(fill)
        await store.write(lambda conn: conn.execute("PRAGMA max_page_count=1073741823"))
        assert await store.submit(_node(store, "after")) is True
    assert _rows(path, "SELECT node_id FROM nodes ORDER BY node_id") == [("after",), ("before",)]
    assert _rows(path, "SELECT count(*) FROM meta WHERE key LIKE 'fill%'") == [(0,)]


async def test_ops_run_on_the_loops_thread_and_other_threads_are_refused(tmp_path: Path):
    import threading

    async with Store(tmp_path / "card.sqlite", "run") as store:
        ran_on = await store.write(lambda conn: threading.get_ident())
        assert ran_on == threading.get_ident()  # no writer thread to pass the GIL to and fro
        with pytest.raises(RuntimeError, match="event loop that opened the store"):
            await anyio.to_thread.run_sync(lambda: store.submit(_node(store, "from-a-thread")))
    assert _rows(tmp_path / "card.sqlite", "SELECT node_id FROM nodes") == []


def _checkpointed(path: Path) -> set[str]:
    """The node ids in the database file itself, ignoring the WAL (empty while a checkpoint is mid-copy)."""
    try:
        conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            return {r[0] for r in conn.execute("SELECT node_id FROM nodes")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return set()


async def test_checkpoints_copy_the_wal_into_the_database_off_the_loop(tmp_path: Path, monkeypatch):
    import engine.store.checkpoint as checkpoint

    monkeypatch.setattr(checkpoint, "INTERVAL_S", 0.0)
    path = tmp_path / "card.sqlite"
    async with Store(path, "run") as store:
        assert _rows(path, "PRAGMA wal_autocheckpoint") == [(1000,)]  # a new connection's default...
        assert await store.write(lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 0
        for i in range(40):  # ...but the writer's own connection never checkpoints on the loop
            await store.submit(_node(store, f"n{i:02d}"))
        await store.submit(_node(store, "last"))
        checkpointer = store._writer._checkpointer
        with anyio.fail_after(10):  # poked after each commit: the database file alone (WAL ignored) catches up
            while not _checkpointed(path) >= {f"n{i:02d}" for i in range(40)} | {"last"}:
                await anyio.sleep(0.01)
        assert checkpointer.last is not None and checkpointer.last[2] > 0  # frames were copied by its thread
    assert len(_rows(path, "SELECT node_id FROM nodes")) == 41


async def test_ops_queued_by_the_tasks_the_next_turn_resumes_share_the_transaction(tmp_path: Path):
    """The flush runs at the end of the turn after the first submit: a task that the same turn wakes (here by an
    event set when the first op was queued) queues into the same transaction instead of waiting for another."""
    path = tmp_path / "card.sqlite"
    commits: list[str] = []
    async with Store(path, "run") as store:
        store._wconn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
        woken = anyio.Event()
        second: list = []

        async def later() -> None:
            await woken.wait()  # resumed in the turn after the one that queued the first op
            second.append(store.submit(_node(store, "second")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            await anyio.sleep(0.01)  # `later` is parked on the event
            first = store.submit(_node(store, "first"))
            woken.set()
            assert await first is True
            await anyio.sleep(0)
        assert await second[0] is True
    assert commits == ["COMMIT"]  # one transaction for both
    assert _rows(path, "SELECT node_id FROM nodes ORDER BY node_id") == [("first",), ("second",)]
