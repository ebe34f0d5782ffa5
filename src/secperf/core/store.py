"""The run store: each run gets its own directory under results/ (never reused), files are written
atomically (temp file + rename) and incrementally, and `latest` points at the newest run."""

from __future__ import annotations

import datetime as _dt
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import result as _result
from .errors import InputError, InternalError, OutputError, ResultError
from .paths import secperf_home
from .result_schema import Result
from .writes import _os_reason, atomic_write, owner_stamp, process_start_ticks  # noqa: F401 - handed on: callers name them as store.X


def is_abandoned(doc: Result) -> bool:
    """A result still marked `running` whose writing process is gone (killed hard, OOM, power)."""
    return _gone(doc.status, doc.owner or {})


def _gone(status: object, owner: dict[str, Any]) -> bool:
    """`running`, and its writer (the owner's pid and start time) no longer runs: a file's JSON object
    is asked this before it is read as a Result (the sweep only rewrites what it must)."""
    if status != "running":
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return True  # written before owners were recorded: nobody can still be writing it
    return process_start_ticks(pid) != owner.get("start_ticks")


def mark_abandoned(doc: Result) -> Result:
    """Status `abandoned`, keeping every series measured so far."""
    note = "the process writing this run died before finishing; the series measured until then are kept"
    doc.status = "abandoned"
    doc.notes = [*(doc.notes or []), note]
    return doc


NAME_MAX = 255


def is_result_file(path: Path) -> bool:
    """Whether a regular file holds a secperf Result (its first bytes name the schema)."""
    try:
        if not Path(path).is_file():
            return False
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b'"secperf.result"' in head


def check_output_path(path: str | Path | None, option: str, inputs: Iterable[str | Path | None] = ()) -> None:
    """Before anything runs: a file secperf will write must be writable where it is named and must
    not be any input (`inputs`: paths the command reads) nor a secperf Result (a run's own file).
    Raises OutputError (exit 2) naming the option and what to do."""
    if not path:
        return
    p = Path(path)
    if any(len(os.fsencode(part)) > NAME_MAX for part in p.parts):
        raise OutputError(f"{option} {path}: a name in the path is longer than {NAME_MAX} bytes; name a shorter file")
    if p.is_dir():
        raise OutputError(f"{option} {path}: is a directory; name a file")
    for src in inputs:
        if src and _same_file(p, Path(src)):
            raise OutputError(
                f"{option} {path}: is also an input of this command ({src}); secperf never writes "
                f"over what it reads: name another file"
            )
    if is_result_file(p):
        raise OutputError(f"{option} {path}: holds a secperf Result; writing there would destroy it: name another file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{option} {path}: the directory {parent} does not exist; create it or name another file")
    if p.exists() and not p.is_file():
        _check_special_output(p, option, path)
        return  # /dev/null, a terminal or a FIFO is written into as it is (atomic_write says why it failed)
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputError(f"{option} {path}: not writable; name a file in a directory you can write to")
    try:  # a real probe: root passes os.access even on /sys and read-only mounts
        fd, tmp = tempfile.mkstemp(prefix=".secperf-write-test.", dir=parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise OutputError(
            f"{option} {path}: cannot write in {parent} ({_os_reason(exc)}); name a file in a "
            f"directory you can write to"
        ) from None


TTY_MAJORS = {4, 5} | set(range(136, 144))  # virtual consoles, /dev/tty, pseudo-terminals


def _check_special_output(p: Path, option: str, path: str | Path) -> None:
    """Of the files that are not regular, secperf writes only into /dev/null, a terminal, a FIFO or
    a socket: any other device (/dev/full, /dev/zero, a disk as root) is refused up front."""

    st = os.stat(p)
    if (
        stat.S_ISBLK(st.st_mode)
        or stat.S_ISCHR(st.st_mode)
        and not (os.path.realpath(p) == "/dev/null" or os.major(st.st_rdev) in TTY_MAJORS)
    ):
        raise OutputError(f"{option} {path}: is a device, not a file; name a file (or /dev/null to discard)")


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


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

    def save(self, doc: Result) -> Path:
        """Write result.json. A Result that is no longer `running` (complete, failed, interrupted) is
        first read back as report, compare and metrics will read it (`readback_problem`); one they
        would refuse is secperf's bug: what passes is kept readable, marked `internal-error`, the
        whole as written goes to result.unchecked.json, and InternalError (exit 1) names the check."""
        text = None
        if doc.status not in ("running", "internal-error"):
            try:
                text = _result.dumps(doc)
            except (ValueError, TypeError, ResultError, RecursionError):
                text = None  # readback_problem names it
            found = readback_problem(doc, self.dir / "secperf.log", text)
            if found is not None:
                self._keep_marked(doc, *found)
        atomic_write(self.result_path, text if text is not None else _result.dumps(doc))
        return self.result_path

    def _keep_marked(self, doc: Result, check: str, problem: str) -> None:
        raw = doc.model_dump(mode="python", by_alias=True, exclude_unset=True, warnings=False)
        kept = self.dir / "result.unchecked.json"
        try:
            atomic_write(kept, json.dumps(raw, indent=1, default=str, allow_nan=True) + "\n")
        except (OutputError, TypeError, ValueError, RecursionError):
            kept = None  # type: ignore[assignment]
        marked = salvage(raw, check, problem, None if kept is None else kept.name)
        atomic_write(self.result_path, _result.dumps(marked))
        raise InternalError(
            f"internal: the Result this run wrote fails {check}: {problem}. This is secperf's bug, not the "
            f"input's: {self.result_path} keeps what passed, marked internal-error"
            + (f"; the Result as written is in {kept}" if kept is not None else "")
        )

    def write_text(self, name: str, text: str) -> Path:
        p = self.dir / name
        atomic_write(p, text)
        return p


# --- reading back what secperf writes ---------------------------------------------------------
# (name, check(doc, log)): what each reader does with a Result beyond loading it (render the report,
# export the metrics). Registered by the readers (app/reading.py): core never imports them.
READBACK_CHECKS: list[tuple[str, Callable[[Result, Path | None], object]]] = []


def register_readback(name: str, check: Callable[[Result, Path | None], object]) -> None:
    if all(n != name for n, _ in READBACK_CHECKS):
        READBACK_CHECKS.append((name, check))


def readback_problem(doc: Result, log: Path | None = None, text: str | None = None) -> tuple[str, str] | None:
    """The first check a reader would fail on this Result, as (check, problem), or None: its JSON
    (finite numbers), the schema every reader loads it with (unique series ids, summaries backed by
    values, ...), then each registered reader check on the Result as loaded back from that JSON. An
    InputError a reader raises on purpose (nothing to export) is an answer, not a failure."""
    try:
        text = text if text is not None else _result.dumps(doc)  # `text`: the JSON already made of `doc`
    except (ValueError, TypeError, ResultError, RecursionError) as exc:
        return "the Result's JSON (finite numbers, known fields)", str(exc)[:300]
    try:
        back = _result.validate(json.loads(text), "result.json")
    except ResultError as exc:
        return "the Result schema (what report, compare and metrics load)", str(exc)[:300]
    for name, check in READBACK_CHECKS:
        try:
            check(back, log)
        except ResultError as exc:  # the reader's words blame the file; here the file is ours
            return name, str(exc).replace("; was the file changed after secperf wrote it?", "")[:300]
        except InputError:
            continue
        except Exception as exc:  # noqa: BLE001 -- any crash of a reader on our own file is the finding
            return name, f"{type(exc).__name__}: {str(exc)[:240]}"
    return None


def salvage(raw: dict[str, Any], check: str, problem: str, kept: str | None) -> Result:
    """The readable part of a Result secperf's own read-back refused, marked `internal-error`: the
    first of each series id with every analysis that passes, else the series without the analyses,
    else the run header alone; `internal` names the check, the problem and what was withheld."""
    declared = {info.alias or name for name, info in Result.model_fields.items()}
    header = {k: v for k, v in raw.items() if k in declared and k not in ("series", "analysis")}
    series, seen, dropped = [], set(), [f"{k!r} (not a field of a Result)" for k in raw if k not in declared]
    for s in raw.get("series") or []:
        sid = s.get("id") if isinstance(s, dict) else None
        if sid in seen:
            dropped.append(f"series {sid!r} (repeated id)")
            continue
        seen.add(sid)
        series.append(s)
    analysis = dict(raw.get("analysis") or {})
    stages: tuple[tuple[list[Any], dict[str, Any], list[str]], ...] = (
        (series, analysis, dropped),
        (series, {}, dropped + [f"analysis.{k}" for k in analysis]),
        ([], {}, ["every series and analysis"]),
    )
    doc: Result | None = None
    for ser, ana, withheld in stages:
        cand = {
            **header,
            "series": ser,
            "analysis": ana,
            "status": "internal-error",
            "internal": {"check": check, "problem": problem, "withheld": withheld, "as_written": kept},
        }
        cand["notes"] = list(header.get("notes") or []) + [
            f"internal: secperf's read-back of this Result failed ({check}: {problem}); what passed is kept"
            + (f" (withheld: {', '.join(withheld)})" if withheld else "")
        ]
        try:
            doc = _result.validate(json.loads(json.dumps(cand, default=str)), "result.json")
        except (ResultError, ValueError, TypeError):
            continue
        if readback_problem(doc) is None:
            return doc
    return _result.validate(
        {
            **header,
            "series": [],
            "analysis": {},
            "status": "internal-error",
            "internal": {"check": check, "problem": problem, "withheld": ["everything"], "as_written": kept},
        },
        "result.json",
    )


MAX_ROOTS = 200
_CREATED: list[Path] = []  # run directories this process made, newest last


def created_runs() -> list[Path]:
    """The run directories this process has created (what an interruption may have left)."""
    return list(_CREATED)


def _roots_file() -> Path:
    return secperf_home() / "result_roots"


def remember_root(root: Path) -> None:
    """Note a results directory in $SECPERF_HOME, so `secperf clean` finds the runs killed there even
    after the watchdog removed their registry file (best effort: a run never fails for it)."""
    try:
        path = _roots_file()
        roots = known_roots()
        me = Path(root).resolve()
        if me in roots:
            return
        lines = [str(r) for r in roots[-(MAX_ROOTS - 1) :]] + [str(me)]
        atomic_write(path, "\n".join(lines) + "\n", mode=0o600)
    except Exception:  # noqa: BLE001 -- the note is a convenience, never a reason to stop a run
        pass


def known_roots() -> list[Path]:
    try:
        text = _roots_file().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, Exception):  # noqa: BLE001
        return []
    return [Path(x) for x in text.splitlines() if x.strip().startswith("/")]


class RunStore:
    def __init__(self, root: str | Path = "results"):
        self.root = Path(root)
        # result.json files found abandoned that could not be marked (a full or read-only file system):
        # (path, reason); the sweep goes on past them
        self.unwritable: list[tuple[Path, str]] = []

    def create(self, kind: str) -> Run:
        """A fresh directory `<UTC time>-<kind>[-k]`; mkdir fails if it exists, so runs never collide."""
        if self.root.exists() and not self.root.is_dir():
            raise InputError(f"--out {self.root}: is a file, not a directory; name a directory for the results")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.root, prefix=".secperf-write-test.")
            probe.close()
        except OSError as exc:
            raise InputError(
                f"--out {self.root}: cannot create or write the results directory "
                f"({exc.strerror or exc}); choose another with --out"
            ) from None
        self.sweep_abandoned()
        remember_root(self.root)
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
        base = f"{stamp}-{kind}"
        for k in range(1, 1000):
            name = base if k == 1 else f"{base}-{k}"
            try:
                (self.root / name).mkdir()
            except FileExistsError:
                continue
            run = Run(self.root / name)
            self._point_latest(name)
            _CREATED.append(run.dir)
            return run
        raise OutputError(
            f"--out {self.root}: could not allocate a run directory (all 999 names of this "
            "second are taken); choose another with --out"
        )

    def abandoned(self) -> list[Path]:
        """Every result.json under this root whose run was abandoned (marked now or earlier)."""
        self.sweep_abandoned()
        out = []
        for res in sorted(self.root.glob("*/result.json")):
            try:
                with open(res, "rb") as f:
                    head = f.read(1 << 16)
            except OSError:
                continue
            if b'"status": "abandoned"' in head:
                out.append(res)
        return out

    def sweep_abandoned(self) -> list[Path]:
        """Mark the runs under this root whose process died while `running` as `abandoned`."""
        marked = []
        for res in sorted(self.root.glob("*/result.json")):
            if res.parent.is_symlink():  # `latest`: the run it points at is swept under its own name
                continue
            try:
                doc = json.loads(res.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            owner = doc.get("owner") if isinstance(doc, dict) else None
            if isinstance(doc, dict) and _gone(doc.get("status"), owner if isinstance(owner, dict) else {}):
                try:
                    atomic_write(res, _result.dumps(mark_abandoned(_result.validate(doc, str(res)))))
                except (OutputError, ResultError, ValueError) as exc:  # one file never stops the sweep
                    if all(p != res for p, _ in self.unwritable):
                        self.unwritable.append((res, str(exc)))
                    continue
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
