"""Terminal tables, JSON/CSV export and the self-contained HTML report."""
