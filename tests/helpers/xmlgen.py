"""Small MSCCL XML programs written by hand for the checker's tests."""

from __future__ import annotations

from pathlib import Path


def step(s: int, type: str, srcbuf: str = "o", srcoff: int = 0, dstbuf: str = "o", dstoff: int = 0, cnt: int = 1,
         depid: int = -1, deps: int = -1, hasdep: int = 0) -> str:
    return (f'<step s="{s}" type="{type}" srcbuf="{srcbuf}" srcoff="{srcoff}" dstbuf="{dstbuf}" dstoff="{dstoff}" '
            f'cnt="{cnt}" depid="{depid}" deps="{deps}" hasdep="{hasdep}"/>')


def tb(id: int, send: int, recv: int, chan: int, *steps: str) -> str:
    body = "\n".join("      " + s for s in steps)
    return f'    <tb id="{id}" send="{send}" recv="{recv}" chan="{chan}">\n{body}\n    </tb>'


def gpu(id: int, i: int, o: int, s: int, *tbs: str) -> str:
    return f'  <gpu id="{id}" i_chunks="{i}" o_chunks="{o}" s_chunks="{s}">\n' + "\n".join(tbs) + "\n  </gpu>"


def algo(*gpus: str, coll: str = "allgather", ngpus: int = 2, chunks: int = 2, proto: str = "Simple",
         nchannels: int = 1, inplace: int = 0, outofplace: int | None = 1, max_bytes: int = 1 << 30,
         name: str = "test") -> str:
    attrs = (f'name="{name}" proto="{proto}" nchannels="{nchannels}" nchunksperloop="{chunks}" ngpus="{ngpus}" '
             f'coll="{coll}" inplace="{inplace}"')
    if outofplace is not None:
        attrs += f' outofplace="{outofplace}" minBytes="0" maxBytes="{max_bytes}"'
    return f"<algo {attrs}>\n" + "\n".join(gpus) + "\n</algo>\n"


def write(tmp: Path, text: str, name: str = "prog.xml") -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def allgather2(first_dep: bool = True, recv_first: bool = False) -> str:
    """A correct 2-rank out-of-place allgather (each rank copies its chunk, sends it, receives the other)."""
    def rank(r: int) -> str:
        peer = 1 - r
        dep = {"depid": 0, "deps": 0} if first_dep else {}
        if recv_first:
            ops = (step(0, "r", "o", peer, "o", peer), step(1, "s", "o", r, "o", r, **dep))
        else:
            ops = (step(0, "s", "o", r, "o", r, **dep), step(1, "r", "o", peer, "o", peer))
        return gpu(r, 1, 2, 0,
                   tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", r, hasdep=1)),
                   tb(1, peer, peer, 0, *ops))
    return algo(rank(0), rank(1))


def allgather2_many(per_rank: int, proto: str = "Simple") -> str:
    """2 ranks, `per_rank` chunks each; each rank sends all its chunks one message at a time, then receives."""
    def rank(r: int) -> str:
        peer = 1 - r
        ops = [step(0, "cpy", "i", 0, "o", r * per_rank, cnt=per_rank, hasdep=1)]
        xfer = [step(k, "s", "o", r * per_rank + k, "o", r * per_rank + k, depid=0 if k == 0 else -1,
                     deps=0 if k == 0 else -1) for k in range(per_rank)]
        xfer += [step(per_rank + k, "r", "o", peer * per_rank + k, "o", peer * per_rank + k) for k in range(per_rank)]
        return gpu(r, per_rank, 2 * per_rank, 0, tb(0, -1, -1, 0, *ops), tb(1, peer, peer, 0, *xfer))
    return algo(rank(0), rank(1), chunks=2 * per_rank, proto=proto)


def allreduce2(double: bool = False, in_place: bool = False) -> str:
    """A 2-rank allreduce of one chunk: exchange, then reduce (rrc) into the output."""
    src = "o" if in_place else "i"
    def rank(r: int) -> str:
        peer = 1 - r
        ops = [step(0, "s", src, 0, "o", 0), step(1, "rrc", src, 0, "o", 0)]
        if double:
            ops.append(step(2, "re", src, 0, "o", 0))  # adds the own contribution a second time
        return gpu(r, 0 if in_place else 1, 1, 0, tb(0, peer, peer, 0, *ops))
    return algo(rank(0), rank(1), coll="allreduce", chunks=1, inplace=int(in_place), outofplace=int(not in_place))
