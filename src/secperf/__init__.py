"""secperf: measure, explain and predict what security costs an IoT connection."""

__version__ = "0.1.0"
