"""What every part of the GPU harness uses: the bundle's programs, $OUT, the
summary, and gemmd or echo servers on loopback ports that stop when a part
is done with them."""
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path


class Lab:
    def __init__(self, root: Path, out: Path):
        self.root = root
        self.out = out
        self.bin = root / ".bundle" / "bin"
        self.work = Path(tempfile.mkdtemp(prefix="gemmd-harness."))
        self.summary = out / "summary.txt"
        self.summary.write_text("")
        self.started = time.monotonic()
        self.env = dict(os.environ)
        lib = [str(root / ".bundle" / "lib"), "/usr/local/cuda/lib64", self.env.get("LD_LIBRARY_PATH", "")]
        self.env["LD_LIBRARY_PATH"] = ":".join(p for p in lib if p)

    # The summary: what the device call prints last.
    def note(self, *lines):
        with self.summary.open("a") as f:
            for line in lines:
                print(line, flush=True)
                f.write(line + "\n")

    def elapsed(self) -> int:
        return int(time.monotonic() - self.started)

    def tool(self, name: str) -> str:
        return str(self.bin / name)

    def has_tool(self, name: str) -> bool:
        return (self.bin / name).is_file() and os.access(self.bin / name, os.X_OK)

    def tools_like(self, pattern: str):
        """The bundle's programs whose names match `pattern` (a glob), sorted:
        earlier builds or variants added to it by hand."""
        return sorted(p.name for p in self.bin.glob(pattern) if self.has_tool(p.name))

    def argv(self, args):
        """ARGS as strings, argv[0] the bundle's program of that name where
        the bundle has one (else a system program)."""
        args = [str(a) for a in args]
        if (self.bin / args[0]).exists():
            args[0] = self.tool(args[0])
        return args

    def run(self, args, out=None, append=False, timeout=None, env=None, stderr=True):
        """Runs ARGS (argv[0] a bundle program or a system one), its output to
        OUT under $OUT (a name) or discarded; returns (exit status, CPU seconds
        it spent, user + system). A program past TIMEOUT is killed: 124."""
        args = self.argv(args)
        sink = open(self.out / out, "ab" if append else "wb") if out else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT if stderr else subprocess.DEVNULL,
                                    env={**self.env, **(env or {})}, start_new_session=True)
            return self._reap(proc, timeout)
        finally:
            if out:
                sink.close()

    def start(self, args, out=None, env=None):
        """ARGS in the background; finish with reap()."""
        args = self.argv(args)
        sink = open(self.out / out, "wb") if out else subprocess.DEVNULL
        proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, env={**self.env, **(env or {})},
                                start_new_session=True)
        proc.sink = sink
        return proc

    def _reap(self, proc, timeout):
        deadline = time.monotonic() + timeout if timeout else None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                rc = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
                return rc, usage.ru_utime + usage.ru_stime
            if deadline and time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.returncode = 124
                return 124, 0.0
            time.sleep(0.02)

    def reap(self, proc, timeout=None):
        try:
            return self._reap(proc, timeout)
        finally:
            if getattr(proc, "sink", None) not in (None, subprocess.DEVNULL):
                proc.sink.close()

    def text(self, args, timeout=None) -> str:
        args = self.argv(args)
        try:
            done = subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout

    def client(self, *args, out=None, append=False, **kw):
        """gemm-client against the gemmd started last."""
        return self.run(["gemm-client", *args], out=out, append=append, **kw)

    @contextlib.contextmanager
    def gemmd(self, name, *args, binary="gemmd"):
        """A gemmd on loopback ports, its log (stderr) in gemmd_NAME.log,
        SERVING before the part goes on; stopped with SIGTERM after it."""
        port_file = self.work / f"port_{name}"
        port_file.unlink(missing_ok=True)
        log = self.out / f"gemmd_{name}.log"
        sink = open(log, "wb")
        proc = subprocess.Popen([*self.argv([binary]), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                 "--port-file", str(port_file), *map(str, args)],
                                stdout=subprocess.DEVNULL, stderr=sink, env=self.env)
        proc.sink = sink
        for _ in range(600):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        previous = self.env.get("GEMM_TARGET")
        port = port_file.read_text().strip() if port_file.exists() else "0"
        self.env["GEMM_TARGET"] = f"127.0.0.1:{port}"
        instance = Gemmd(name, proc, log, self.env["GEMM_TARGET"])
        if self.client("health", "--wait", "120")[0] != 0:
            self.note(f"gemmd {name} is not SERVING")
        try:
            yield instance
        finally:
            instance.stop(self)
            if previous is None:
                self.env.pop("GEMM_TARGET", None)
            else:
                self.env["GEMM_TARGET"] = previous

    @contextlib.contextmanager
    def echo_server(self, *args):
        """grpc-echo-bench serving as gemmd does (poll poller, completion-queue
        threads), in a process of its own; yields its host:port."""
        port_file = self.work / "echo_port"
        port_file.unlink(missing_ok=True)
        proc = self.start(["grpc-echo-bench", *echo_as_gemmd_args(), "--serve", port_file, *args],
                          env={"GRPC_POLL_STRATEGY": "poll"})
        for _ in range(100):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        try:
            yield f"127.0.0.1:{port_file.read_text().strip()}"
        finally:
            proc.terminate()
            self.reap(proc)

    def echo_as_gemmd(self, *args, out=None, append=False):
        """The bare echo under gemmd's own transport model, in one process."""
        return self.run(["grpc-echo-bench", *echo_as_gemmd_args(), *args], out=out, append=append,
                        env={"GRPC_POLL_STRATEGY": "poll"})

    def zeros(self, name, size):
        path = self.work / name
        if not path.exists():
            with open(path, "wb") as f:
                f.truncate(size)
        return path

    def cleanup(self):
        shutil.rmtree(self.work, ignore_errors=True)


def echo_as_gemmd_args():
    # gemmd serves Multiply on the completion-queue API with a thread per
    # quarter of the cores (1-4).
    threads = min(4, max(1, (os.cpu_count() or 4) // 4))
    return ["--server-api", "async", "--server-threads", str(threads)]


class Gemmd:
    def __init__(self, name, proc, log, target):
        self.name, self.proc, self.log, self.target = name, proc, log, target
        self.exit_status = None

    @property
    def pid(self):
        return self.proc.pid

    def metrics(self) -> str:
        """Its /metrics, scraped through the port its log names."""
        import urllib.request
        match = re.search(r"metrics on port (\d+)", self.log.read_text(errors="replace"))
        if not match:
            return ""
        with urllib.request.urlopen(f"http://127.0.0.1:{match.group(1)}/metrics", timeout=10) as reply:
            return reply.read().decode()

    def stop(self, lab):
        if self.exit_status is None:
            self.proc.send_signal(signal.SIGTERM)
            self.exit_status = lab.reap(self.proc)[0]
        return self.exit_status
