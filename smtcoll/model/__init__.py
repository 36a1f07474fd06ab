"""The vocabulary: plain frozen data with validation and networkx views, no solver."""

from smtcoll.model.collective import Collective
from smtcoll.model.instance import Instance
from smtcoll.model.schedule import Schedule, Send, Step
from smtcoll.model.topology import Link, Nic, SwitchGroup, Topology

__all__ = ["Collective", "Instance", "Link", "Nic", "Schedule", "Send", "Step", "SwitchGroup", "Topology"]
