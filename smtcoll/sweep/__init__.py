"""`smtcoll sweep`: the verified algorithm directory for a whole cluster (docs/sweep.md).

- `sizes`: buffer sizes (`1KiB:4GiB`) and the size ranges written into `minBytes`/`maxBytes`;
- `cost`: the α-β model of a lowered schedule (protocol, instances) and the bound it is compared with;
- `selection`: the fastest candidate per size range (the lower envelope of the candidates' lines);
- `tasks`: one task = one (topology, node count, collective): synthesize the Pareto frontier, select,
  lower and verify; a pure function of its inputs, run in a child process with time and memory limits;
- `cache`: task results on disk by content hash;
- `run`: the tasks on Dask (a local cluster or an existing scheduler), retries, progress;
- `manifest`: the directory, the manifest (JSON, with `manifest.schema.json`);
- `report`: a table per collective and a bandwidth plot.
"""
