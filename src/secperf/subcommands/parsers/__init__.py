"""The parser halves of the commands (subcommands/__init__.py): each command's NAME, HELP and
`add_arguments`, and the options several commands share (common.py). Building the parser imports
these and nothing of secperf.app, so secperf's top-level help and a usage error stay quick."""
