"""Ready scenarios (TOML): what `secperf run` measures."""
