"""`--figures DIR`: every plot of a Result as a print-quality PNG (300 dpi) and PDF, one file pair
per plot, named after what it shows (``crypto-distribution-rsa.png``), the same plots as the report."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.result_schema import Result
from ..core.writes import atomic_write
from .html import library_warnings, plots_of
from .plots import style

PNG_DPI = 300


def figures_directory(directory: Path) -> Path:
    """The figures directory, created if needed; a file there or no way to create it is bad input."""
    if any(len(os.fsencode(part)) > 255 for part in directory.parts):
        raise InputError(f"--figures {directory}: a name in the path is longer than 255 bytes; name a shorter one")
    if directory.exists() and not directory.is_dir():
        raise InputError(
            f"--figures {directory}: is a file, not a directory; name a directory to write the figures into"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".secperf-write-test.", dir=directory)  # root passes os.access on /sys
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(
            f"--figures {directory}: cannot create or write the directory ({exc.strerror or exc}); "
            f"name a writable directory"
        ) from None
    return directory


def write_figures(doc: Result, directory: Path, log: Path | None = None) -> list[Path]:
    """Write every plot of ``doc`` as NAME.png (300 dpi) and NAME.pdf into ``directory``; returns
    the paths written, PNG then PDF per plot, in the report's order. Library warnings raised while
    drawing go to `log` (the run's log), not the terminal."""
    directory = figures_directory(Path(directory))
    with library_warnings(log):
        return _write(doc, directory)


def _write(doc: Result, directory: Path) -> list[Path]:
    written: list[Path] = []
    seen: dict[str, int] = {}
    for plot in plots_of(doc):
        seen[plot.name] = seen.get(plot.name, 0) + 1
        stem = plot.name if seen[plot.name] == 1 else f"{plot.name}-{seen[plot.name]}"  # never overwrite a plot
        fig = plot.figure()
        with style():
            formats: tuple[tuple[str, dict[str, Any]], ...] = (("png", {"dpi": PNG_DPI}), ("pdf", {}))
            for ext, kw in formats:
                path = directory / f"{stem}.{ext}"
                buf = io.BytesIO()  # rendered in memory, then written through the one atomic writer
                fig.savefig(buf, format=ext, metadata={"CreationDate": None} if ext == "pdf" else None, **kw)
                atomic_write(path, buf.getvalue(), what="--figures")
                written.append(path)
    return written
