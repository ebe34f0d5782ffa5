"""`--system FILE.toml` next to command-line options (whatif, plan): the rule, in one place.

Decision: the command line overrides the file, option by option, and says so on stderr
("note: --network lte-m overrides [network].link = nb-iot of FILE"): a file describes the system,
the command line asks a question about a variant of it ("the same, over LTE-M") without editing
the file. An option that repeats the file's value is taken silently. Not a helper of its own
subcommand (not in subcommands.MODULES)."""

from __future__ import annotations

from ..inputs.vocabulary import note


def _shown(v) -> str:
    if isinstance(v, list | tuple):
        return ",".join(str(x) for x in v)
    return str(v)


class Merge:
    """Picks each option's value: the command line's when given, else the file's."""

    def __init__(self, path: str):
        self.path = path
        self.overridden: list[str] = []

    def pick(self, opt: str, cli, file_key: str, file_value):
        if cli is None or cli == [] or cli == "":
            return file_value
        if file_value is not None and file_value != [] and cli != file_value:
            self.overridden.append(opt)
            note(f"{opt} {_shown(cli)} overrides {file_key} = {_shown(file_value)} of {self.path}")
        return cli
