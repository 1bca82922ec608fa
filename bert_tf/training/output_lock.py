"""One training run at a time per --output_dir: a lock file the training scripts hold.

Two runs writing into one output_dir delete each other's checkpoints (--keep_checkpoint_max)
and resume from each other's states. The scripts (run_pretraining.py, run_classifier.py,
run_squad.py, run_tagging.py) therefore hold `output_dir/bert_tf.lock` from start to end: an
flock(2) on it, and in it the holder's pid, host, start time and command line for the
message the next run prints when it refuses to start.

- The kernel drops the flock when its process dies, however it dies (SIGKILL, OOM killer,
  power loss aside), so a lock file left behind is recognised as stale and taken over with a
  warning naming the process that left it. Where the filesystem has no flock (ENOLCK), the
  holder's pid is checked instead (on this host only).
- A lock file written on another host (an output_dir on NFS) is refused: its process cannot
  be checked from here; the message says which file to delete if it no longer runs.
- Multi-worker runs share one output_dir by design: only the chief (which writes the
  checkpoints) takes the lock; `hold_output_dir(..., is_chief=False)` takes none. Nor do
  eval/predict-only runs (bert_tf.flags.hold_output_dir): they write no checkpoints, and an
  eval beside a running training works with the original.
- A remote output_dir (gs://, hdfs://, ...) is not locked (no flock there): logged.
"""

import contextlib
import datetime
import errno
import fcntl
import json
import os
import socket
import sys

from absl import logging

LOCK_NAME = "bert_tf.lock"

# Locks this process holds: {lock path: [fd, depth]} (taking one twice is not a conflict).
_HELD = {}


class OutputDirInUseError(RuntimeError):
    """Another live run holds the output_dir."""


def _describe(holder):
    if not holder:
        return "another process"
    text = f"process {holder.get('pid')} on host {holder.get('host')}"
    details = [holder[k] for k in ("started", "command") if holder.get(k)]
    return text + (f" ({', '.join(details)})" if details else "")


def _read_holder(fd):
    """The holder record in the lock file, or None when it is empty or unreadable."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 1 << 16)
        holder = json.loads(data.decode("utf-8"))
        return holder if isinstance(holder, dict) else None
    except (OSError, ValueError):
        return None


def _process_exists(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True  # someone else's live process; or a pid we cannot judge
    return True


class OutputDirLock:
    """The lock of one output_dir (see the module docstring). `acquire()` raises
    OutputDirInUseError naming the holder; `release()` removes the lock file."""

    def __init__(self, output_dir):
        self.output_dir = output_dir
        self.path = os.path.join(os.path.abspath(output_dir), LOCK_NAME)
        self.host = socket.gethostname()

    def _refuse(self, holder, hint=""):
        raise OutputDirInUseError(
            f"--output_dir={self.output_dir} is in use by {_describe(holder)}: two runs in one "
            f"output_dir would delete each other's checkpoints; wait for it to end or choose "
            f"another --output_dir{hint}")

    def _open_locked(self):
        """(fd of the lock file, whether it holds its flock: False where the filesystem has
        none); raises OutputDirInUseError while another process holds it."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                self._refuse(holder)
            except OSError as e:
                if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    os.close(fd)
                    raise
                return fd, False
            # The previous holder removes the file on release: a lock on the inode it
            # unlinked is no lock; open the new file.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                return fd, True
            os.close(fd)

    def acquire(self):
        if self.path in _HELD:
            _HELD[self.path][1] += 1
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd, flocked = self._open_locked()
        try:
            holder = _read_holder(fd)
            if holder and holder.get("pid") != os.getpid():
                same_host = holder.get("host") == self.host
                if not same_host:
                    self._refuse(holder, f" (it runs on another host and cannot be checked "
                                         f"from here: if it no longer runs, delete {self.path})")
                if not flocked and _process_exists(holder.get("pid")):
                    self._refuse(holder)
                logging.warning(
                    "%s was left by %s, which no longer runs (killed?): taking over its "
                    "output_dir", self.path, _describe(holder))
            record = {"pid": os.getpid(), "host": self.host,
                      "started": datetime.datetime.now().isoformat(timespec="seconds"),
                      "command": " ".join(sys.argv)[:500]}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode("utf-8"), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        _HELD[self.path] = [fd, 1]

    def release(self):
        held = _HELD.get(self.path)
        if held is None:
            return
        held[1] -= 1
        if held[1]:
            return
        del _HELD[self.path]
        # Removed while still locked, so no other run can lock the old file in between.
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        os.close(held[0])


@contextlib.contextmanager
def hold_output_dir(output_dir, is_chief=True):
    """Holds output_dir's lock for the `with` block (released on exceptions too). Takes none
    on a non-chief worker or a remote output_dir."""
    if not is_chief or not output_dir:
        yield
        return
    if "://" in output_dir:
        logging.info("--output_dir=%s is remote: not locked against a second run", output_dir)
        yield
        return
    lock = OutputDirLock(output_dir)
    lock.acquire()
    try:
        yield
    finally:
        lock.release()
