"""Communication-pattern verdicts and the measures that change them (reads model/sim output only)."""
