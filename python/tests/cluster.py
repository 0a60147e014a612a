"""A local cluster for the Python client's tests: a master and tablet servers started
from the build's daemons and conf/*.gflags, on 127.0.0.1 with ports the daemons pick
(read back from their --server_dump_info_path files), data in a temp dir. Stops every
process it started, by PID."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class LocalCluster:
    def __init__(self, bin_dir, num_tservers=1, tserver_flags=()):
        self.bin_dir = bin_dir
        self.work = tempfile.mkdtemp(prefix="nyala-python-test-")
        self.procs = {}
        self.master = self._start("master", "nyala-master", "master.gflags")
        self.tservers = []
        for i in range(num_tservers):
            self.tservers.append(self._start(f"ts{i}", "nyala-tserver", "tserver.gflags",
                                             f"--tserver_master_addrs={self.master}",
                                             *tserver_flags))

    def _start(self, name, binary, flagfile, *flags):
        data = os.path.join(self.work, name)
        os.makedirs(data)
        info = os.path.join(self.work, name + ".info")
        with open(os.path.join(self.work, name + ".out"), "w") as log:
            proc = subprocess.Popen(
                [os.path.join(self.bin_dir, binary), f"--flagfile={ROOT}/conf/{flagfile}",
                 f"--fs_data_dirs={data}", f"--log_dir={self.work}",
                 "--rpc_bind_addresses=127.0.0.1:0", "--webserver_port=0",
                 "--webserver_interface=127.0.0.1", f"--server_dump_info_path={info}", *flags],
                stdout=log, stderr=subprocess.STDOUT)
        self.procs[name] = proc
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(info) and os.path.getsize(info) > 0:
                with open(info) as f:
                    for line in f:
                        if line.startswith("rpc="):
                            return line.strip().split("=", 1)[1]
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited during start-up; see {self.work}")
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not start within 30 s")

    def kill(self, name):
        """SIGKILLs one daemon and waits for it."""
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait()

    def stop(self, keep=False):
        for proc in self.procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = {}
        if not keep:
            shutil.rmtree(self.work, ignore_errors=True)
