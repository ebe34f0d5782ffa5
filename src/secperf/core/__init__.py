"""Result format, statistics, host metadata and the run store."""
