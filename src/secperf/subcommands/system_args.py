"""`--system FILE.toml` next to command-line options (whatif, plan): the rule, in one place.

Decision: the command line overrides the file, option by option, and says so on stderr
("note: --network lte-m overrides [network].link = nb-iot of FILE"): a file describes the system,
the command line asks a question about a variant of it ("the same, over LTE-M") without editing
the file. An option that repeats the file's value is taken silently. Not a helper of its own
subcommand (not in subcommands.MODULES)."""

from __future__ import annotations

import re
from typing import TypeVar

from ..core.errors import InputError
from ..inputs.vocabulary import note

_T = TypeVar("_T")


def _shown(v: object) -> str:
    if isinstance(v, list | tuple):
        return ",".join(str(x) for x in v)
    return str(v)


class Merge:
    """Picks each option's value: the command line's when given, else the file's; remembers which
    options it took from the file (`taken`), so an error about one names the file's key path."""

    # an option's other spellings in messages (old names)
    ALIASES = {"--server-cert": ("--server-cert", "--cert"), "--key": ("--key", "--se"), "PROTOCOL": ("PROTOCOL",)}

    def __init__(self, path: str) -> None:
        self.path = path
        self.overridden: list[str] = []
        self.taken: dict[str, str] = {}

    def pick(self, opt: str, cli: _T | None, file_key: str, file_value: _T) -> _T:
        if cli is None or cli == [] or cli == "":
            if file_value is not None and file_value != [] and file_value != "":
                self.taken[opt] = file_key
            return file_value
        if file_value is not None and file_value != [] and cli != file_value:
            self.overridden.append(opt)
            note(f"{opt} {_shown(cli)} overrides {file_key} = {_shown(file_value)} of {self.path}")
        return cli


def in_file_words(exc: BaseException, path: str, taken: dict[str, str]) -> BaseException:
    """An InputError about an option whose value the command took from the system file, said in the
    file's words: `--server-cert: unknown key type` becomes `--system FILE: [protocol].server_cert:
    unknown key type` (the user never wrote --server-cert). Other errors are returned as they are."""

    if not isinstance(exc, InputError) or not taken:
        return exc
    text = str(exc)
    for opt, key in taken.items():
        for spelling in Merge.ALIASES.get(opt, (opt,)):
            pat = re.compile(rf"(?<![\w-]){re.escape(spelling)}(?![\w-])")
            if pat.search(text):
                new = pat.sub(key, text, count=1)
                return type(exc)(new if new.startswith("--system") else f"--system {path}: {new}")
    return exc
