"""hermes-qt: a native Qt desktop client for Hermes-compatible agent gateways."""

__version__ = "0.1.0"
