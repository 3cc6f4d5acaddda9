"""A bundle in memory: relative path -> bytes. Loaded from a directory or a .zip, written back deterministically
(sorted entries, fixed zip timestamps and modes) and atomically (temp sibling, then rename)."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

from engine.cards.format.lines import Located, decode_lines
from engine.cards.format.model import STREAMS
from core.errors import ArtifactError, UsageError

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def blob_path(digest: str) -> str:
    return f"blobs/{digest[:2]}/{digest}"


def stream_path(stream: str) -> str:
    return f"{stream}.jsonl"


class Bundle:
    def __init__(self, files: dict[str, bytes] | None = None, source: Path | None = None,
                 duplicates: list[str] | None = None):
        self.files: dict[str, bytes] = dict(files or {})
        self.source = source
        self.duplicates: list[str] = list(duplicates or [])  # zip entry names that occur more than once

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | Path) -> "Bundle":
        path = Path(path)
        if path.is_dir():
            return cls({p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*"))
                        if p.is_file()}, path)
        if path.is_file() and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                infos = [i for i in zf.infolist() if not i.filename.endswith("/")]
                names = [i.filename for i in infos]
                prefix = _common_root(names)
                duplicates = sorted(n[len(prefix):] for n, k in Counter(names).items() if k > 1)
                files: dict[str, bytes] = {}
                for info in infos:  # a repeated name keeps its first entry; the validator reports the repeat
                    files.setdefault(info.filename[len(prefix):], zf.read(info))
            return cls(files, path, duplicates)
        if not path.exists():
            raise UsageError(f"no such card: {path}")
        raise UsageError(f"not a card directory or .zip: {path}")

    def rows(self, stream: str) -> tuple[list[Located], list[tuple[str, str]]]:
        name = stream_path(stream)
        return decode_lines(name, self.files.get(name, b""))

    def stream_rows(self) -> dict[str, list[Located]]:
        return {s: self.rows(s)[0] for s in STREAMS}

    def blob(self, digest: str) -> bytes:
        try:
            return self.files[blob_path(digest)]
        except KeyError:
            raise ArtifactError(f"card lacks blob {blob_path(digest)}") from None

    @property
    def is_zip(self) -> bool:
        return self.source is not None and self.source.is_file()

    # ------------------------------------------------------------------ writing
    def zip_bytes(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            for name in sorted(self.files):
                info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                info.create_system = 3
                zf.writestr(info, self.files[name], compresslevel=9)
        return buffer.getvalue()

    def write_zip(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(self.zip_bytes())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def write_dir(self, path: str | Path) -> Path:
        """Build the whole directory beside `path`, then swap it in. An existing `path` must be a card or empty."""
        path = Path(path)
        if path.exists() and (not path.is_dir() or (any(path.iterdir()) and not (path / "manifest.json").exists())):
            raise UsageError(f"--out {path} exists and is not a rollout card; refusing to replace it")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            for name in sorted(self.files):
                target = tmp / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(self.files[name])
            old = None
            if path.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
                old.rmdir()
                os.replace(path, old)
            os.replace(tmp, path)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return path

    def save(self, path: str | Path | None = None) -> Path:
        target = Path(path) if path is not None else self.source
        if target is None:
            raise UsageError("nowhere to write the card")
        if target.suffix == ".zip" or (target.exists() and target.is_file()):
            return self.write_zip(target)
        return self.write_dir(target)


def _common_root(names: list[str]) -> str:
    """A zip made by zipping the card's directory has one top folder: strip it."""
    if not names or any("/" not in n for n in names):
        return ""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and f"{next(iter(tops))}/manifest.json" in names:
        return next(iter(tops)) + "/"
    return ""
