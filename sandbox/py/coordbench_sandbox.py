"""coordbench sandbox boot: the first code a run's process runs.

The Go runner starts this file with the chosen interpreter, in a process
group of its own and, where the machine allows, in new user, mount,
network, PID, IPC and UTS namespaces (as root-in-namespace). Nothing of the
code to run has run yet. It first waits for one byte on the gate (gate_fd):
the runner writes it once this process is in the run's cgroup, so nothing of
the run runs outside it. It then closes every descriptor but stdin, stdout,
stderr, the record channel and the setup channel, whatever the runner's
process left open. Then, by the configuration's mode:

* "root": enters a cgroup namespace of its own and names its UTS namespace
  "sandbox" (no host cgroup path or hostname shows), builds a minimal root
  on a tmpfs (the interpreter, its standard library, the packages and shared
  libraries it loads, bind-mounted from the host; a few device nodes; a
  fresh /proc of the PID namespace showing its processes and nothing else
  (subset=pid: none of the machine's counters, /proc/stat, loadavg,
  meminfo, pressure, sys); the run's library and script copied
  under /sandbox, read-only, so that no mount names their host path; a
  size-limited tmpfs as the
  work directory /sandbox/work), pivot_roots into it and detaches the host's
  tree, and makes every mount read-only except the work directory. Nothing
  else of the host (its files, its other processes) is reachable.
* "lockdown": mounts a size-limited tmpfs over the work directory, where the
  kernel allows it a /proc of the PID namespace (subset=pid) over the host's
  and an empty tmpfs over /sys, and makes every other mount of the host's
  tree read-only.
* "namespaces", "plain": no file system changes.

In every mode it then sets the resource limits, soft = hard (CPU seconds
get one second of grace between SIGXCPU and SIGKILL; no real-time priority,
no nice value below the default), so the code cannot raise them; with
"root" or "lockdown" enters a further user and mount namespace in which it
holds no mapped identity, which locks the read-only mounts and leaves it no
capability over any file; sets no_new_privs; installs a seccomp filter that
refuses sysinfo(2) and syslog(2) (the machine's load, memory and process
count, the kernel's log) and every system call of another ABI (where the
architecture is one it knows); changes to the work directory; and replaces
itself (execve) with a fresh interpreter running the script.

The setup channel is file descriptor setup_fd, the write end of a pipe the
runner reads: "ready" is written just before execve, and the descriptor is
close-on-exec, so the code never holds it. A failure before or at execve
writes "setup failed: ..." there and exits with status 120. Whatever the code
prints or exits with later cannot reach this channel, so it cannot pass its
own failure off as the runner's.

The configuration is one JSON argument: mode, argv, env, cwd, work (the
host's work directory), scratch_bytes, limits ({"cpu": s, "as": bytes,
"nproc": n, "fsize": bytes, "nofile": n, "core": 0, "rtprio": 0, "nice": 0}),
setup_fd, gate_fd, record_fd, sys_pivot_root, and with mode "root" root:
{dir, bytes (the root tmpfs's size), binds: [[path, is_dir]], symlinks:
[[path, target]], devices: [path], files: [[host, inside, is_dir]] (copied),
work}.
"""

import ctypes
import errno
import json
import os
import resource
import shutil
import sys

SETUP_FAILED = 120

# <linux/mount.h>, <sched.h>, <sys/prctl.h>; the same on every architecture
# (mount_setattr is in the unified syscall table from Linux 5.12).
SYS_MOUNT_SETATTR = 442
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 0x2
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUSER = 0x10000000
PR_SET_NO_NEW_PRIVS = 38
# <linux/seccomp.h>, <linux/filter.h>, <linux/audit.h>
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_RET_K = 0x06
# machine: (AUDIT_ARCH_*, the numbers of sysinfo and syslog, the first
# number of another ABI sharing the architecture (x32), or None)
DENIED_SYSCALLS = {
    "x86_64": (0xC000003E, (99, 103), 0x40000000),
    "aarch64": (0xC00000B7, (179, 116), None),
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _b(s):
    return s.encode() if isinstance(s, str) else s


def _mount(src, dst, fstype, flags, data=None):
    _check(_libc.mount(_b(src), _b(dst), _b(fstype), flags, _b(data)),
           "mount %s on %s" % (src or fstype, dst))


def _mount_setattr(path, flags, attr_set, attr_clr):
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    _check(_libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, _b(path), flags,
                         ctypes.byref(attr), ctypes.sizeof(attr)),
           "mount_setattr " + path)


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _mkfile(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a"):
        pass


def build_root(root, scratch_bytes, sys_pivot_root):
    """Builds the minimal root and pivots into it (see the module doc)."""
    new = root["dir"]
    # Nothing of what follows may propagate back to the host's mounts.
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=0755" % int(root["bytes"]))
    for path, target in root["symlinks"]:
        os.makedirs(os.path.dirname(new + path), exist_ok=True)
        os.symlink(target, new + path)
    for path, is_dir in root["binds"]:
        inside = new + path
        if is_dir:
            os.makedirs(inside, exist_ok=True)
        else:
            _mkfile(inside)
        _mount(path, inside, None, MS_BIND | MS_REC)
    for dev in root["devices"]:
        _mkfile(new + dev)
        _mount(dev, new + dev, None, MS_BIND)
    os.makedirs(new + "/proc", exist_ok=True)
    for options in ("subset=pid", None):
        try:
            _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)
            break
        except OSError:
            # a kernel before 5.8 knows no subset (the probe reports the
            # counters visible); one that refuses proc: no /proc at all
            pass
    work = new + root["work"]
    os.makedirs(work, exist_ok=True)
    _mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=0700" % scratch_bytes)
    # The run's own files are copied, not bound: a bind mount would show
    # their host path in /proc/self/mountinfo.
    for host, inside, is_dir in root["files"]:
        if is_dir:
            shutil.copytree(host, new + inside)
        else:
            os.makedirs(os.path.dirname(new + inside), exist_ok=True)
            shutil.copyfile(host, new + inside)
            os.chmod(new + inside, 0o644)
    old = new + "/.old"
    os.makedirs(old, exist_ok=True)
    os.chdir(new)
    _check(_libc.syscall(sys_pivot_root, b".", b".old"), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "detach the host's tree")
    os.rmdir("/.old")
    _mount_setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)
    _mount_setattr(root["work"], 0, 0, MOUNT_ATTR_RDONLY)


def lockdown(work, scratch_bytes):
    _mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=0700" % scratch_bytes)
    # The machine's counters and other processes out of sight where the
    # kernel allows it (it refuses a new /proc where the host's has parts
    # masked, as in containers); the probe reports what stays visible.
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid")
    except OSError:
        pass
    try:
        _mount("tmpfs", "/sys", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
    except OSError:
        pass
    _mount_setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)
    _mount_setattr(work, 0, 0, MOUNT_ATTR_RDONLY)


def seal():
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare user and mount namespaces")


def deny_host_counters():
    """Installs the seccomp filter (see the module doc); where the machine
    is not one it knows, or the kernel has no seccomp, nothing: the probe
    reports what the code can read."""
    known = DENIED_SYSCALLS.get(os.uname().machine)
    if known is None:
        return
    arch, denied, foreign = known
    prog = [(BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
            (BPF_JEQ_K, 1, 0, arch),
            "deny",
            (BPF_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    if foreign is not None:
        prog.append((BPF_JGE_K, "deny", 0, foreign))
    for nr in denied:
        prog.append((BPF_JEQ_K, "deny", 0, nr))
    prog.append((BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    prog.append((BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM))
    last = len(prog) - 1
    insns = []
    for i, ins in enumerate(prog):
        if ins == "deny":
            ins = (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM)
        code, jt, jf, k = ins
        if jt == "deny":
            jt = last - i - 1
        insns.append(_SockFilter(code, jt, jf, k))
    filt = (_SockFilter * len(insns))(*insns)
    fprog = _SockFprog(len(insns), filt)
    _check(_libc.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER),
                       ctypes.byref(fprog), ctypes.c_ulong(0), ctypes.c_ulong(0)), "seccomp")


def wait_gate(fd):
    """Waits until the runner has put this process into the run's cgroup."""
    try:
        got = os.read(fd, 1)
    finally:
        os.close(fd)
    if got != b"g":
        raise OSError("the runner closed the gate")


def hide_host_names():
    """A cgroup namespace rooted at the run's cgroup (/proc/self/cgroup
    shows "/", not the host's cgroup path) and a hostname of our own (the
    UTS namespace starts with the host's)."""
    _check(_libc.unshare(CLONE_NEWCGROUP), "unshare the cgroup namespace")
    name = b"sandbox"
    _check(_libc.sethostname(name, len(name)), "sethostname")


def close_inherited(keep):
    """Closes every descriptor above stderr but those in keep, whatever the
    runner's process left open without close-on-exec."""
    lo = 3
    for fd in sorted(keep) + [0x7FFFFFFF]:
        if fd > lo:
            os.closerange(lo, fd)
        lo = max(lo, fd + 1)


LIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
    "rtprio": resource.RLIMIT_RTPRIO,
    "nice": resource.RLIMIT_NICE,
}


def set_limits(limits):
    for name, value in sorted(limits.items()):
        soft = hard = int(value)
        if name == "cpu":
            hard = soft + 1
        resource.setrlimit(LIMITS[name], (soft, hard))


def _report(fd, text):
    try:
        os.write(fd, text.encode("utf-8", "replace"))
    except OSError:
        pass


def main():
    cfg = json.loads(sys.argv[1])
    fd = int(cfg["setup_fd"])
    try:
        wait_gate(int(cfg["gate_fd"]))
        close_inherited({int(cfg["record_fd"]), fd})
        mode = cfg["mode"]
        if mode == "root":
            hide_host_names()
            build_root(cfg["root"], int(cfg["scratch_bytes"]), int(cfg["sys_pivot_root"]))
        elif mode == "lockdown":
            lockdown(cfg["work"], int(cfg["scratch_bytes"]))
        set_limits(cfg.get("limits", {}))
        if mode in ("root", "lockdown"):
            seal()
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl no_new_privs")
        try:
            deny_host_counters()
        except OSError:
            pass  # the probe reports sysinfo(2) readable
        os.chdir(cfg["cwd"])
        sys.stdout.flush()
        os.set_inheritable(fd, False)
        _report(fd, "ready\n")
        os.execve(cfg["argv"][0], cfg["argv"], dict(e.split("=", 1) for e in cfg["env"]))
    except BaseException as e:  # noqa: BLE001 - every failure is reported the same way
        _report(fd, "setup failed: %s\n" % e)
        os._exit(SETUP_FAILED)


if __name__ == "__main__":
    main()
