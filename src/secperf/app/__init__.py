"""Running a scenario: phases, progress, the run store, interruption. The CLI calls it."""
