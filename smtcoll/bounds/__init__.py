"""Lower bounds on steps, rounds, rounds per chunk, throughput and time, each with a witness or certificate.

One module per family: `network` (the flow network and cut capacities, shared with `synth/scale`'s LP
routing), `demand` (what must be received), `distance`, `receive`, `cuts` (cuts and chunk-hops), `holdings`
(what a rank can hold round by round), `relay` (what a node knows of the others, relayed through it), `cycle`
(one-address sums on an odd cycle), `reach` (one-address sums on nodes with few links inside),
`inflow` (one-address sums: what enters a node late reaches few of its ranks), `ports` (one-address sums
on switch ports: the few GPUs with NICs cannot feed the others' last two rounds), `rails` (one-address sums:
over NIC links alone a rank reaches only its rail), `hubs` (one-address sums where the reach bound is 3: every
rank at once, the nodes' round-1 sends feeding their own ranks or the others' hubs), `summed` (one-address sums:
every rank's set summed, growing by what the ports and shared NICs send a round), `setcut`
(what a set of ranks must receive or send in all, over what reaches its members, shared ports counted once),
`lp` (the
HiGHS layer and the flow LP), `forest` (ForestColl's Allgather cut formula), `time` (the k-synchronous
alpha-beta bound), `throughput` (the physical time bound T(B) >= us_per_byte * B with exact certificates),
`search` (everything together, and the strongest bounds for the synthesizer) and `witness` (re-checking).
Every bound found is valid; the witnesses let a reader check it by hand. Pure Python + networkx, numpy and
scipy's HiGHS; never z3.
"""

from smtcoll.bounds.cuts import candidate_cuts, cut_bound, cut_witness, hops_bound
from smtcoll.bounds.cycle import cycle_bound
from smtcoll.bounds.demand import must_enter, must_receive, must_receive_all
from smtcoll.bounds.distance import distance_bound
from smtcoll.bounds.entry import entry_bound
from smtcoll.bounds.forest import gb_capacities, throughput_bound, unit_speed
from smtcoll.bounds.holdings import holdings_bound
from smtcoll.bounds.hubs import hubs_bound
from smtcoll.bounds.inflow import inflow_bound
from smtcoll.bounds.lp import lp_bound
from smtcoll.bounds.network import cut_capacity, flow_network
from smtcoll.bounds.ports import ports_bound
from smtcoll.bounds.rails import rails_bound
from smtcoll.bounds.reach import reach_bound
from smtcoll.bounds.receive import receive_bound
from smtcoll.bounds.relay import relay_bound
from smtcoll.bounds.results import Bound, Bounds
from smtcoll.bounds.search import (
    SearchBounds,
    best_rounds,
    explain,
    lower_bounds,
    min_rounds,
    min_steps,
    search_bounds,
    strongest_bounds,
)
from smtcoll.bounds.setcut import setcut_bound
from smtcoll.bounds.summed import summed_bound
from smtcoll.bounds.time import time_bound
from smtcoll.bounds.witness import check_witness

__all__ = ["Bound", "Bounds", "SearchBounds", "best_rounds", "candidate_cuts", "check_witness", "cut_bound",
           "cut_capacity", "cut_witness", "cycle_bound", "distance_bound", "entry_bound", "explain", "flow_network",
           "gb_capacities", "holdings_bound", "hops_bound", "hubs_bound", "inflow_bound", "lower_bounds", "lp_bound",
           "min_rounds", "min_steps", "must_enter", "must_receive", "must_receive_all", "ports_bound", "rails_bound",
           "reach_bound", "receive_bound", "relay_bound", "search_bounds", "setcut_bound", "strongest_bounds",
           "summed_bound", "throughput_bound", "time_bound", "unit_speed"]
