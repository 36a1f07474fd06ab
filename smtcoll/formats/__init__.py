"""Schedule files: smtcoll's own JSON, and SCCL (`*.msccl.json`) and TACCL (`*.sccl.json`) algorithms."""

from smtcoll.formats.schedules import dumps_schedule, load_schedule, parse_schedule, save_schedule

__all__ = ["dumps_schedule", "load_schedule", "parse_schedule", "save_schedule"]
