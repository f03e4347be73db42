"""hermes-procs: durable background jobs shared by AI agents and humans."""

__version__ = "0.1.0"
