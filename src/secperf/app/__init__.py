"""Running a scenario: phases, progress, the run store, interruption. The CLI calls it."""

# every Result the app layer marks finished is read back as the readers read it (core/store.Run.save)
from . import reading as _reading  # noqa: E402,F401
