"""What-if Monte Carlo and fleet simulations over cost tables, flight models and link specs (never measures)."""
