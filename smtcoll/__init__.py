"""smtcoll: synthesize, prove and verify collective communication algorithms."""

__version__ = "0.1.0"
