"""Writing output files safely: every command that writes a file goes through `write_text`.

- A target that exists and is not a regular file (a directory, a device such as /dev/full or /dev/null, a
  FIFO, a socket) is refused with a clear error: replacing it would destroy it, and writing into it would
  block or lose the output.
- A symlink is followed: the file it points to is written (atomically, beside the target), the link stays.
- A regular file is replaced atomically (a temporary file in the same folder, then a rename), so that a
  runtime scanning the folder never sees half a file; the replaced file keeps its permission bits.
- A new file gets the mode a user expects, `0o666 & ~umask` (mkstemp would leave 0600, which an MSCCL
  runtime running as another user cannot read).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from smtcoll.errors import OutputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(path: str | os.PathLike[str]) -> Path:
    """The path to write for `path` (a symlink resolved to its target); refuses non-regular targets
    before any work is done."""
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise OutputError(str(path), f"cannot write: folder {target.parent} does not exist") from None
        return target
    except OSError as e:
        raise OutputError(str(path), f"cannot write: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(str(path), "is a directory; give a file name")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else
                "not a regular file")
        raise OutputError(str(path), f"is {kind}; smtcoll writes regular files only")
    return target


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` (UTF-8) to `path` as described above; returns the file written (the symlink's target)."""
    return write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write `data` to `path` as described above; returns the file written (the symlink's target)."""
    return write_chunks(path, (data,))


def write_chunks(path: str | os.PathLike[str], chunks: Iterable[bytes]) -> Path:
    """`write_bytes` of the concatenated chunks, without holding them all in memory."""
    target = check_writable(path)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    except OSError as e:
        raise OutputError(str(path), f"cannot write: {e.strerror or e}") from None
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            for data in chunks:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise OutputError(str(path), f"cannot write: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return target
