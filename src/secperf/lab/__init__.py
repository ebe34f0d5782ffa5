"""The lab: the real world secperf sets up and tears down (PKI, servers; later token, network)."""
