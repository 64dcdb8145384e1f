"""coordbench sandbox boot: the first code a step's process runs.

The Go runner starts this file with the chosen interpreter, in a process
group of its own and, where the machine allows, in new user, mount,
network, PID, IPC and UTS namespaces (as root-in-namespace). Nothing of the
step's code has run yet. It then, in order:

1. with "lockdown": mounts a size-limited tmpfs over the work directory,
   makes every mount read-only (mount_setattr, recursively from "/") except
   that tmpfs, so the code can write nowhere else;
2. sets the resource limits, soft = hard (CPU seconds get one second of
   grace between SIGXCPU and SIGKILL), so the code cannot raise them;
3. with "lockdown": enters a further user and mount namespace in which it
   holds no mapped identity, which locks the read-only mounts (the code
   can no longer remount them) and leaves it no capability over any file;
4. sets no_new_privs, so no set-user-ID program regains privileges;
5. changes to the work directory and replaces itself (execv) with a fresh
   interpreter running the step's script, which inherits all of the above.

A failure of any step ends the process with status 120 and a line starting
"coordbench-sandbox: setup failed:" on stderr, before any untrusted code
ran; the runner reports it as its own error, not the solver's.

The configuration is one JSON argument: python, script, work, lockdown,
scratch_bytes, limits ({"cpu": s, "as": bytes, "nproc": n, "fsize": bytes,
"nofile": n, "core": 0}).
"""

import ctypes
import json
import os
import resource
import sys

SETUP_FAILED = 120

# <linux/mount.h>, <sched.h>, <sys/prctl.h>; the same on every architecture
# (mount_setattr is in the unified syscall table from Linux 5.12).
SYS_MOUNT_SETATTR = 442
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MS_NOSUID = 0x2
MS_NODEV = 0x4
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _mount_setattr(path, flags, attr_set, attr_clr):
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    _check(_libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), flags,
                         ctypes.byref(attr), ctypes.sizeof(attr)),
           "mount_setattr " + path)


def lockdown(work, scratch_bytes):
    _check(_libc.mount(b"tmpfs", work.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                       ("size=%d,mode=0700" % scratch_bytes).encode()),
           "mount tmpfs on the work directory")
    _mount_setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)
    _mount_setattr(work, 0, 0, MOUNT_ATTR_RDONLY)


def seal():
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare user and mount namespaces")


LIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}


def set_limits(limits):
    for name, value in sorted(limits.items()):
        soft = hard = int(value)
        if name == "cpu":
            hard = soft + 1
        resource.setrlimit(LIMITS[name], (soft, hard))


def main():
    cfg = json.loads(sys.argv[1])
    try:
        if cfg.get("lockdown"):
            lockdown(cfg["work"], int(cfg["scratch_bytes"]))
        set_limits(cfg.get("limits", {}))
        if cfg.get("lockdown"):
            seal()
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl no_new_privs")
        os.chdir(cfg["work"])
        sys.stdout.flush()
    except Exception as e:  # noqa: BLE001 - every failure is reported the same way
        sys.stderr.write("coordbench-sandbox: setup failed: %s\n" % e)
        sys.stderr.flush()
        os._exit(SETUP_FAILED)
    try:
        os.execv(cfg["python"], [cfg["python"], "-s", cfg["script"]])
    except OSError as e:
        sys.stderr.write("coordbench-sandbox: setup failed: exec %s: %s\n" % (cfg["python"], e))
        sys.stderr.flush()
        os._exit(SETUP_FAILED)


if __name__ == "__main__":
    main()
