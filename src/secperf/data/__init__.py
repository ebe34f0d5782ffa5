"""Profiles and reference tables as TOML/JSON data, each figure with its source."""
