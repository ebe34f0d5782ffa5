"""The run store: each run gets its own directory under results/ (never reused), files are written
atomically (temp file + rename) and incrementally, and `latest` points at the newest run."""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from pathlib import Path

from . import result as _result
from .errors import InputError


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None if
    there is no such process. A PID with the same start time is the same process, not a reused PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[19])


def owner_stamp() -> dict:
    """Who writes a run: this process, so a later run can tell whether it is still alive."""
    return {"pid": os.getpid(), "start_ticks": process_start_ticks(os.getpid())}


def is_abandoned(doc: dict) -> bool:
    """A result still marked `running` whose writing process is gone (killed hard, OOM, power)."""
    if doc.get("status") != "running":
        return False
    owner = doc.get("owner") or {}
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return True  # written before owners were recorded: nobody can still be writing it
    return process_start_ticks(pid) != owner.get("start_ticks")


def mark_abandoned(doc: dict) -> dict:
    """Status `abandoned`, keeping every series measured so far."""
    doc["status"] = "abandoned"
    doc.setdefault("notes", []).append("the process writing this run died before finishing; the series "
                                       "measured until then are kept")
    return doc


def atomic_write(path: Path, text: str, mode: int = 0o644) -> None:
    """Write text to path through a temp file and a rename, so a reader never sees half a file.
    A path that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written into
    as it is: renaming over it would replace the device with a regular file (as root, `-o /dev/null`
    once turned the machine's /dev/null into one)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory: name a file to write")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class Run:
    """One run's directory; result.json is rewritten atomically after every series."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.run_id = self.dir.name

    @property
    def result_path(self) -> Path:
        return self.dir / "result.json"

    @property
    def report_path(self) -> Path:
        return self.dir / "report.html"

    def save(self, doc: dict) -> Path:
        atomic_write(self.result_path, _result.dumps(doc))
        return self.result_path

    def write_text(self, name: str, text: str) -> Path:
        p = self.dir / name
        atomic_write(p, text)
        return p


class RunStore:
    def __init__(self, root: str | Path = "results"):
        self.root = Path(root)

    def create(self, kind: str) -> Run:
        """A fresh directory `<UTC time>-<kind>[-k]`; mkdir fails if it exists, so runs never collide."""
        if self.root.exists() and not self.root.is_dir():
            raise InputError(f"--out {self.root}: is a file, not a directory; name a directory for the results")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.root, prefix=".secperf-write-test.")
            probe.close()
        except OSError as exc:
            raise InputError(f"--out {self.root}: cannot create or write the results directory "
                             f"({exc.strerror or exc}); choose another with --out") from None
        self.sweep_abandoned()
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        base = f"{stamp}-{kind}"
        for k in range(1, 1000):
            name = base if k == 1 else f"{base}-{k}"
            try:
                (self.root / name).mkdir()
            except FileExistsError:
                continue
            run = Run(self.root / name)
            self._point_latest(name)
            return run
        raise OSError(f"could not allocate a run directory under {self.root}")

    def sweep_abandoned(self) -> list[Path]:
        """Mark the runs under this root whose process died while `running` as `abandoned`."""
        marked = []
        for res in sorted(self.root.glob("*/result.json")):
            try:
                doc = json.loads(res.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and is_abandoned(doc):
                atomic_write(res, _result.dumps(mark_abandoned(doc)))
                marked.append(res)
        return marked

    def _point_latest(self, name: str) -> None:
        link = self.root / "latest"
        tmp = self.root / f".latest.{os.getpid()}"
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        os.symlink(name, tmp)
        os.replace(tmp, link)
