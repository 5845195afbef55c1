"""A real systemd node for tests: systemd as PID 1 of its own namespaces, on a throw-away
overlay of this machine's root, with journald, sshd, a non-root operator account and sudo.

Why each safety point (a naive ``unshare … systemd`` on the host's root once let
``systemd-tmpfiles --boot`` wipe the host's /tmp, and sysusers / sysctl ran against the host):

* ``/`` inside is overlayfs: lowerdir = the host's / (never written), upper and work dirs on a
  tmpfs mounted only inside the node's mount namespace; /tmp, /var/tmp and /run are fresh
  tmpfs. The setup pivot_root()s into the overlay and detaches the host root.
* /proc/sys, /sys and the cgroup tmpfs are read-only, so units touching kernel-wide state skip
  themselves; the capability bounding set drops SYS_TIME, SYS_MODULE and friends.
* Own PID, mount, net, UTS, IPC and cgroup namespaces; the node's cgroups sit below the host
  hierarchy roots (so no v1 controllers inside: MemoryCurrent is [not set] there).
* Host-enabled units are disabled inside (ssh kept) and the SysV generator masked.
* Network: one veth pair with a /30 of the node's own; nothing else is reachable.
* A canary file in the host's /tmp is checked after boot and after teardown; only the node's
  PID 1 is killed (SIGKILL ends its whole PID namespace).

Inside: ``dl_train.service`` (Restart=always, a fake training loop that writes checkpoints),
``broken.service`` (fails at start), ``hang.service`` (its stop hangs), an operator ``ops``
(groups systemd-journal) whose sudoers line allows exactly ``SUDO_ALLOWED`` and nothing else,
``dl_eval.service``, ``eval@.service`` and ``dl\x2dsmoke.service`` which that line does not
allow, and ``once.service`` (fails at once, each run naming its InvocationID).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

OPERATOR = "ops"
SYSTEMCTL = "/usr/bin/systemctl"
SUDO_ALLOWED = (
    f"{SYSTEMCTL} restart dl_train.service",
    f"{SYSTEMCTL} start dl_train.service",
    f"{SYSTEMCTL} stop dl_train.service",
    f"{SYSTEMCTL} restart broken.service",
    f"{SYSTEMCTL} restart hang.service",
    f"{SYSTEMCTL} start once.service",
)
CAP_DROP = (
    "-sys_time,-sys_module,-sys_rawio,-syslog,-mac_admin,-mac_override,-wake_alarm,-block_suspend,"
    "-sys_pacct"
)
KEEP_ENABLED = "ssh.service sshd.service"
MASK = """systemd-timesyncd.service sys-kernel-debug.mount sys-kernel-tracing.mount
 sys-kernel-config.mount sys-fs-fuse-connections.mount proc-sys-fs-binfmt_misc.automount
 proc-sys-fs-binfmt_misc.mount systemd-binfmt.service systemd-sysctl.service
 systemd-modules-load.service kmod-static-nodes.service systemd-udevd.service
 systemd-udev-trigger.service systemd-hwdb-update.service systemd-pstore.service
 systemd-firstboot.service systemd-repart.service getty.target console-getty.service
 container-getty@.service getty@.service serial-getty@.service"""
LAB_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NEEDS = (
    "/lib/systemd/systemd",
    "/usr/sbin/sshd",
    "/usr/bin/sudo",
    "/usr/bin/unshare",
    "/usr/bin/nsenter",
    "/usr/bin/setpriv",
    "/usr/sbin/ip",
    "/usr/bin/ssh-keygen",
    "/usr/bin/timeout",
)

UNITS = {
    # A training job that steps and checkpoints; Restart=always as in production.
    "dl_train.service": """
        [Unit]
        Description=fake training job (dltui test)
        [Service]
        ExecStart=/bin/sh -c 'mkdir -p /var/lib/ckpt; i=0; while true; do i=$$((i+1)); \\
            echo "step $$i"; [ $$((i % 5)) = 1 ] && touch /var/lib/ckpt/step-$$i.pt; sleep 1; done'
        Restart=always
        RestartSec=1
        StartLimitIntervalSec=0
    """,
    # Fails every start: the operator must see why, from its journal.
    "broken.service": """
        [Unit]
        Description=training job that cannot start (dltui test)
        StartLimitIntervalSec=0
        [Service]
        ExecStart=/bin/sh -c 'echo "loading dataset /data/imagenet"; \\
            echo "FileNotFoundError: /data/imagenet/train" >&2; exit 3'
        Restart=always
        RestartSec=0.5
    """,
    # Not in the operator's sudoers: the test adds the line dltui suggests.
    "dl_eval.service": """
        [Unit]
        Description=fake evaluation job (dltui test)
        [Service]
        ExecStart=/bin/sh -c 'while true; do echo eval; sleep 2; done'
        Restart=always
    """,
    # Fails at once, once per start (no Restart=), naming its own invocation: a run's journal
    # must be that run's.
    "once.service": """
        [Unit]
        Description=job that fails at once, saying which run it is (dltui test)
        StartLimitIntervalSec=0
        [Service]
        Type=exec
        ExecStart=/bin/sh -c 'echo "run $$INVOCATION_ID: CUDA error: no device"; exit 2'
    """,
    # A template and a name with a systemd escape: the sudoers line and polkit rule dltui
    # suggests must allow exactly them.
    "eval@.service": """
        [Unit]
        Description=fake evaluation instance %i (dltui test)
        [Service]
        ExecStart=/bin/sleep infinity
    """,
    "dl\\x2dsmoke.service": """
        [Unit]
        Description=fake smoke job with an escaped name (dltui test)
        [Service]
        ExecStart=/bin/sleep infinity
    """,
    # Its stop never finishes: a restart of it hangs.
    "hang.service": """
        [Unit]
        Description=job whose stop hangs (dltui test)
        [Service]
        ExecStart=/bin/sleep infinity
        ExecStop=/bin/sleep infinity
        TimeoutStopSec=infinity
    """,
}

INNER = r"""
set -euo pipefail
R=$DIR/root
[ "$$" = 1 ] || { echo "inner: not PID 1 of a new PID namespace" >&2; exit 1; }
for p in mnt net uts ipc cgroup; do
  case " $HOST_NS " in
    *" $(readlink /proc/self/ns/$p) "*) echo "inner: still in host $p ns" >&2; exit 1 ;;
  esac
done
mount --make-rprivate /
! grep -q ' shared:' /proc/self/mountinfo || { echo "inner: shared propagation left" >&2; exit 1; }
mount -t tmpfs -o mode=0700,size=1g dltui-rw "$DIR/rw"
mkdir -m 0755 "$DIR/rw/upper"; mkdir "$DIR/rw/work"
mount -t overlay dltui-root -o "lowerdir=/,upperdir=$DIR/rw/upper,workdir=$DIR/rw/work" "$R"
[ "$(stat -f -c %T "$R")" = overlayfs ] || { echo "inner: overlay not mounted" >&2; exit 1; }
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
for p in sys sysrq-trigger irq bus; do
  [ -e "$R/proc/$p" ] || continue
  mount --bind "$R/proc/$p" "$R/proc/$p"; mount -o remount,bind,ro,nosuid,nodev,noexec "$R/proc/$p"
done
tr -d '\n' < /proc/sys/kernel/random/uuid > "$DIR/rw/boot_id"
mount --bind "$DIR/rw/boot_id" "$R/proc/sys/kernel/random/boot_id"
mount -o remount,bind,ro "$R/proc/sys/kernel/random/boot_id"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"
if [ "$CGMODE" = hybrid ]; then
  mount -t tmpfs -o mode=0755,size=1m,nosuid,nodev,noexec dltui-cgroup "$R/sys/fs/cgroup"
  mkdir "$R/sys/fs/cgroup/systemd" "$R/sys/fs/cgroup/unified"
  mount -t cgroup -o none,name=systemd,nosuid,nodev,noexec cgroup "$R/sys/fs/cgroup/systemd"
  mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$R/sys/fs/cgroup/unified"
  mount -o remount,ro,nosuid,nodev,noexec "$R/sys/fs/cgroup"
else
  mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$R/sys/fs/cgroup"
fi
mount -t tmpfs -o mode=0755,size=4m,nosuid dltui-dev "$R/dev"
mknod -m 666 "$R/dev/null" c 1 3; mknod -m 666 "$R/dev/zero" c 1 5; mknod -m 666 "$R/dev/full" c 1 7
mknod -m 666 "$R/dev/random" c 1 8; mknod -m 666 "$R/dev/urandom" c 1 9
mknod -m 666 "$R/dev/tty" c 5 0
mkdir -m 0755 "$R/dev/pts"; mkdir -m 1777 "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5,nosuid,noexec devpts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev dltui-shm "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"; ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
touch "$R/dev/console"; mount --bind "$DIR/console.log" "$R/dev/console"
mount -t tmpfs -o mode=0755,size=64m,nosuid,nodev dltui-run "$R/run"
mount -t tmpfs -o mode=1777,size=256m,nosuid,nodev dltui-tmp "$R/tmp"
mount -t tmpfs -o mode=1777,size=256m,nosuid,nodev dltui-vartmp "$R/var/tmp"
hostname "$NODE_NAME"
echo "$NODE_NAME" > "$R/etc/hostname"
printf '127.0.1.1\t%s\n' "$NODE_NAME" >> "$R/etc/hosts"
tr -d '-' < /proc/sys/kernel/random/uuid > "$R/etc/machine-id"
mkdir -p "$R/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRateLimitBurst=0\n' \
  > "$R/etc/systemd/journald.conf.d/dltui.conf"
for l in "$R"/etc/systemd/system/*.wants/* "$R"/etc/systemd/system/*.requires/*; do
  [ -L "$l" ] || continue
  case " $KEEP_ENABLED " in *" ${l##*/} "*) continue ;; esac
  rm -f "$l"
done
for u in $MASK; do ln -sfn /dev/null "$R/etc/systemd/system/$u"; done
mkdir -p "$R/etc/systemd/system-generators"
ln -sfn /dev/null "$R/etc/systemd/system-generators/systemd-sysv-generator"
# sshd: our own host key only, key-only logins
rm -f "$R"/etc/ssh/ssh_host_*
install -m 600 "$DIR/hostkey" "$R/etc/ssh/ssh_host_ed25519_key"
install -m 644 "$DIR/hostkey.pub" "$R/etc/ssh/ssh_host_ed25519_key.pub"
mkdir -p "$R/etc/ssh/sshd_config.d"
printf '%s\n' 'PasswordAuthentication no' 'KbdInteractiveAuthentication no' 'UseDNS no' \
  'MaxSessions 64' 'HostKey /etc/ssh/ssh_host_ed25519_key' \
  > "$R/etc/ssh/sshd_config.d/dltui.conf"
mkdir -p "$R/etc/systemd/system/multi-user.target.wants"
ln -sfn /lib/systemd/system/ssh.service "$R/etc/systemd/system/multi-user.target.wants/ssh.service"
cp "$DIR"/units/*.service "$R/etc/systemd/system/"
ln -sfn /etc/systemd/system/dl_train.service \
  "$R/etc/systemd/system/multi-user.target.wants/dl_train.service"
chroot "$R" id -u "$OPERATOR" >/dev/null 2>&1 \
  || chroot "$R" useradd -m -s /bin/bash -U -G systemd-journal "$OPERATOR"
chroot "$R" usermod -p '*' "$OPERATOR"
: > "$R/etc/sudoers.d/README" 2>/dev/null || true
install -m 440 "$DIR/sudoers" "$R/etc/sudoers.d/dltui-test"
for u in root "$OPERATOR"; do
  h=$(chroot "$R" getent passwd "$u" | cut -d: -f6)
  install -d -m 700 "$R$h/.ssh"
  install -m 600 "$DIR/client.pub" "$R$h/.ssh/authorized_keys"
  chroot "$R" chown -R "$u:" "$h/.ssh"
  # a quiet, fast non-interactive shell (the host's rc files are not ours to run)
  printf '[ -z "$PS1" ] && return\n' > "$R$h/.bashrc"
done
cd "$R"; mkdir -p .oldroot; pivot_root . .oldroot; cd /
umount -l /.oldroot; rmdir /.oldroot
[ "$(stat -f -c %T /)" = overlayfs ] || { echo "inner: / is not the overlay" >&2; exit 1; }
exec setpriv --bounding-set "$CAP_DROP" /usr/bin/env -i container=dltui-test \
  /lib/systemd/systemd --system --unit=multi-user.target --show-status=no
"""


class SystemdNodeError(RuntimeError):
    pass


def missing() -> str | None:
    """Why a systemd node cannot be built here, or None."""
    if os.geteuid() != 0:
        return "a real systemd node needs root (namespaces, overlayfs, veth)"
    for path in NEEDS:
        if not os.path.exists(path):
            return (
                f"{path} is missing (install systemd, openssh-server, sudo, util-linux, iproute2)"
            )
    with open("/proc/filesystems") as f:
        if "overlay" not in f.read():
            return "the kernel has no overlayfs"
    try:
        _cgmode()
    except SystemdNodeError as exc:
        return str(exc)
    return None


def _cgmode() -> str:
    kind = _fstype("/sys/fs/cgroup")
    if kind == "cgroup2fs":
        return "unified"
    if (
        kind == "tmpfs"
        and _fstype("/sys/fs/cgroup/systemd") == "cgroupfs"
        and _fstype("/sys/fs/cgroup/unified") == "cgroup2fs"
    ):
        return "hybrid"
    raise SystemdNodeError("unsupported cgroup layout at /sys/fs/cgroup")


def _fstype(path: str) -> str:
    try:
        return subprocess.run(
            ["stat", "-f", "-c", "%T", path], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return ""


def _cg_roots(mode: str) -> list[str]:
    return (
        ["/sys/fs/cgroup"]
        if mode == "unified"
        else ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"]
    )


class SystemdNode:
    """One node; ``start()`` boots it, ``close()`` removes every trace of it."""

    def __init__(self, base: Path, index: int = 0):
        tag = f"{os.getpid() % 100000}{index}"
        self.name = f"sdnode{index}"
        self.dir = Path(f"/var/tmp/dltui-sdnode-{tag}")  # scratch, never under the host's /tmp
        self.base = base  # client side: keys, ssh config, known_hosts (any temp dir)
        self.cg = f"dltui-sdnode-{tag}"
        self.veth = f"dsd{tag}"[-15:]
        self.subnet = _free_subnet(index)
        self.host_ip, self.ip = f"{self.subnet}.1", f"{self.subnet}.2"
        self.canary = Path(f"/tmp/.dltui-sdnode-canary-{tag}")
        self.pid: int | None = None
        self.pidns: str | None = None
        self.mode = _cgmode()
        self.boot_s: float | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> SystemdNode:
        if self.dir.exists():
            raise SystemdNodeError(f"{self.dir} exists from an earlier run")
        try:
            self._prepare()
            self._boot()
        except BaseException:
            self.close()
            raise
        return self

    def _prepare(self) -> None:
        (self.dir / "rw").mkdir(parents=True)
        (self.dir / "root").mkdir()
        (self.dir / "units").mkdir()
        self.dir.chmod(0o700)
        (self.dir / "console.log").touch()
        for unit, text in UNITS.items():
            (self.dir / "units" / unit).write_text(textwrap.dedent(text).lstrip())
        self.write_sudoers(SUDO_ALLOWED, path=self.dir / "sudoers")
        self.base.mkdir(parents=True, exist_ok=True)
        _keygen(self.dir / "hostkey")
        _keygen(self.base / "client_key")
        shutil.copy(self.base / "client_key.pub", self.dir / "client.pub")
        hostkey = (self.dir / "hostkey.pub").read_text().split()
        (self.base / "known_hosts").write_text(f"{self.ip} {hostkey[0]} {hostkey[1]}\n")
        (self.base / "ssh_config").write_text(
            f"Host {self.name} {self.name}-root\n"
            f"  HostName {self.ip}\n"
            f"  IdentityFile {self.base / 'client_key'}\n"
            "  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.base / 'known_hosts'}\n"
            "  ConnectTimeout 5\n"
            f"Host {self.name}\n  User {OPERATOR}\n"
            f"Host {self.name}-root\n  User root\n"
        )
        self.canary.write_text("dltui systemd node canary: must survive the node\n")

    def _boot(self) -> None:
        cgprocs = []
        for root in _cg_roots(self.mode):
            os.mkdir(f"{root}/{self.cg}")
            cgprocs.append(f"{root}/{self.cg}/cgroup.procs")
        host_ns = " ".join(
            os.readlink(f"/proc/self/ns/{n}") for n in ("mnt", "net", "uts", "ipc", "cgroup")
        )
        (self.dir / "inner.sh").write_text(INNER)
        env = {
            "PATH": LAB_PATH,
            "DIR": str(self.dir),
            "HOST_NS": host_ns,
            "CGMODE": self.mode,
            "NODE_NAME": self.name,
            "OPERATOR": OPERATOR,
            "KEEP_ENABLED": KEEP_ENABLED,
            "MASK": " ".join(MASK.split()),
            "CAP_DROP": CAP_DROP,
        }
        # Join the node's cgroups, then unshare: its cgroup namespace is rooted there.
        launcher = (
            'for f in "$@"; do echo $$ > "$f"; done; '
            "exec unshare --mount --propagation private --pid --fork --net --uts --ipc --cgroup "
            '-- bash "$DIR/inner.sh"'
        )
        started = time.monotonic()
        with open(self.dir / "launcher.log", "wb") as log:
            self.launcher = subprocess.Popen(
                ["bash", "-c", launcher, "_", *cgprocs],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self._child_of(self.launcher.pid)
        self.pidns = os.readlink(f"/proc/{self.pid}/ns/pid")
        self._leave_cgroups(self.launcher.pid)
        if not self._wait(
            lambda: _comm(self.pid) == "systemd" or not os.path.exists(f"/proc/{self.pid}"), 30
        ):
            raise SystemdNodeError("the node's setup did not exec systemd: " + self._log())
        if _comm(self.pid) != "systemd":
            raise SystemdNodeError("the node's setup failed: " + self._log())
        _wire_network(self.pid, self.veth, self.host_ip, self.ip)
        state = ""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            state = self.exec(
                ["systemctl", "is-system-running", "--wait"], timeout=90, check=False
            ).stdout.strip()
            # "offline": PID 1 not answering yet (a loaded machine asks early); --wait only
            # waits out "initializing" and "starting"
            if state and state != "offline":
                break
            time.sleep(0.1)
        self.boot_s = time.monotonic() - started
        if not self.canary.exists():
            raise SystemdNodeError(f"HOST CANARY {self.canary} VANISHED during boot")
        if state not in ("running", "degraded"):
            raise SystemdNodeError(
                f"systemd never finished booting (state {state!r}): " + self._log()
            )
        if not self._wait(
            lambda: (
                self.exec(["systemctl", "is-active", "ssh.service"], check=False).stdout.strip()
                == "active"
            ),
            20,
        ):
            raise SystemdNodeError("sshd did not start inside the node")

    def _child_of(self, ppid: int) -> int:
        pid = _pid1_of(ppid)
        if pid is None:
            raise SystemdNodeError("the node's PID 1 did not start: " + self._log())
        return pid

    def _leave_cgroups(self, pid: int) -> None:
        """Move the launcher (host PID namespace) back out of the node's cgroups."""
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hid, ctrl, path = line.split(":", 2)
            for candidate in (pid, _parent_unshare(pid)):
                if candidate is None:
                    continue
                if self.mode == "hybrid" and ctrl == "name=systemd":
                    _write(f"/sys/fs/cgroup/systemd{path}/cgroup.procs", candidate)
                elif hid == "0":
                    root = "/sys/fs/cgroup" if self.mode == "unified" else "/sys/fs/cgroup/unified"
                    _write(f"{root}{path}/cgroup.procs", candidate)

    def close(self) -> None:
        if self.pid is not None and self._is_ours():
            os.kill(self.pid, signal.SIGKILL)  # PID 1 of the node's namespace: ends all of it
            self._wait(lambda: not os.path.exists(f"/proc/{self.pid}"), 10)
        launcher = getattr(self, "launcher", None)
        if launcher is not None:
            try:
                launcher.wait(10)
            except subprocess.TimeoutExpired:
                pass
        subprocess.run(["ip", "link", "del", self.veth], capture_output=True)
        for root in _cg_roots(self.mode):
            top = Path(root) / self.cg
            for _ in range(50):
                if not top.exists():
                    break
                for d in sorted(
                    (p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)
                ) + [top]:
                    try:
                        d.rmdir()
                    except OSError:
                        pass
                time.sleep(0.05)
        if self.dir.exists():
            mounts = Path("/proc/self/mountinfo").read_text()
            if f" {self.dir}" not in mounts:
                shutil.rmtree(self.dir, ignore_errors=True)
        self.pid = None

    def canary_intact(self) -> bool:
        return self.canary.exists()

    def remove_canary(self) -> None:
        self.canary.unlink(missing_ok=True)

    # -- inside the node ----------------------------------------------------------------------

    def exec(
        self,
        argv: list[str],
        timeout: float = 30,
        check: bool = True,
        user: str | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` inside every namespace of the node, on its root (as root, or ``user``)."""
        if not self._is_ours():
            raise SystemdNodeError("the node is not running")
        if user is not None:
            argv = ["runuser", "-u", user, "--", *argv]
        full = [
            "nsenter",
            "-t",
            str(self.pid),
            "-m",
            "-u",
            "-i",
            "-n",
            "-p",
            "-C",
            "-r",
            "-w",
            "--",
            "setpriv",
            "--bounding-set",
            CAP_DROP,
            "/usr/bin/env",
            "-i",
            f"PATH={LAB_PATH}",
            "LANG=C.UTF-8",
            "SYSTEMD_PAGER=cat",
            "SYSTEMD_COLORS=0",
            *argv,
        ]
        done = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input)
        if check and done.returncode != 0:
            raise SystemdNodeError(f"{argv} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def show(self, unit: str, prop: str) -> str:
        return self.exec(["systemctl", "show", unit, "-p", prop, "--value"]).stdout.strip()

    def write_sudoers(self, commands, path: Path | None = None) -> None:
        text = f"{OPERATOR} ALL=(root) NOPASSWD: " + ", ".join(commands) + "\n"
        if path is not None:
            path.write_text(text)
            return
        self.install_sudoers_text(text)

    def install_sudoers_text(self, text: str) -> None:
        self.exec(
            [
                "sh",
                "-c",
                "cat > /etc/sudoers.d/dltui-test && chmod 440 /etc/sudoers.d/dltui-test "
                "&& visudo -cq",
            ],
            input=text,
        )

    def sudoers_text(self) -> str:
        return self.exec(["cat", "/etc/sudoers.d/dltui-test"]).stdout

    # -- helpers ------------------------------------------------------------------------------

    def _is_ours(self) -> bool:
        if self.pid is None or not os.path.exists(f"/proc/{self.pid}"):
            return False
        try:
            return (
                os.readlink(f"/proc/{self.pid}/ns/pid")
                == self.pidns
                != os.readlink("/proc/self/ns/pid")
            )
        except OSError:
            return False

    def _log(self) -> str:
        text = ""
        for name in ("launcher.log", "console.log"):
            try:
                text += (self.dir / name).read_text()[-1500:]
            except OSError:
                pass
        return text.strip() or "(no output)"

    @staticmethod
    def _wait(cond, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if cond():
                return True
            time.sleep(0.05)
        return cond()


def _wire_network(pid: int, veth: str, host_ip: str, ip: str) -> None:
    """A veth pair: ``veth`` here with ``host_ip``, ``host0`` in the node's namespace with
    ``ip`` (a /30 of the node's own: nothing else is reachable from it)."""
    subprocess.run(
        ["ip", "link", "add", veth, "type", "veth", "peer", "name", "host0", "netns", str(pid)],
        check=True,
    )
    subprocess.run(["ip", "addr", "add", f"{host_ip}/30", "dev", veth], check=True)
    subprocess.run(["ip", "link", "set", veth, "up"], check=True)
    inside = ["nsenter", "-t", str(pid), "-n", "ip"]
    subprocess.run([*inside, "addr", "add", f"{ip}/30", "dev", "host0"], check=True)
    subprocess.run([*inside, "link", "set", "host0", "up"], check=True)


def _pid1_of(ppid: int) -> int | None:
    """The node's PID 1 started by the launcher ``ppid`` (through unshare's fork), or None."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            kids = Path(f"/proc/{ppid}/task/{ppid}/children").read_text().split()
        except OSError:
            kids = []
        if kids and _comm(int(kids[0])) != "unshare":
            return int(kids[0])
        if kids:  # unshare forked; its child is the node's PID 1
            grand = Path(f"/proc/{kids[0]}/task/{kids[0]}/children").read_text().split()
            if grand:
                return int(grand[0])
        time.sleep(0.02)
    return None


def _free_subnet(index: int) -> str:
    used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    start = 100 + (os.getpid() * 7 + index * 31) % 150
    for n in range(start, start + 150):
        subnet = f"10.200.{n % 250}"
        if f" {subnet}." not in used:
            return subnet
    raise SystemdNodeError("no free 10.200.N.0/30 subnet for the node")


def _keygen(path: Path) -> None:
    for old in (path, path.with_name(path.name + ".pub")):
        old.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dltui-test", "-f", str(path)],
        check=True,
    )


def _comm(pid: int | None) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _parent_unshare(pid: int) -> int | None:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(kids[0]) if kids and _comm(int(kids[0])) == "unshare" else None


def _write(path: str, pid: int) -> None:
    try:
        Path(path).write_text(str(pid))
    except OSError:
        pass
