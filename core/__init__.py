"""The registry core: durable jobs, each under its own supervisor process. No UI imports here."""

from .registry.process_registry import ProcessRegistry

__all__ = ["ProcessRegistry"]
