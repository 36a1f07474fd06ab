"""Synthesis at scale: schedules for 64 to 1024 ranks in seconds, each checked, with its gap to the bound.

- `translate`: on rings, tori and hypercubes (vertex-transitive: a group acts on the ranks) one rank's
  schedule and its translates are the whole schedule;
- `engine`: picks the method, turns combining collectives into their duals (ReduceScatter, Reduce) or
  into reduce-then-broadcast phases (Allreduce), checks the schedule and measures its gap.
"""
