"""K app servers behind nginx configured as deploy/nginx.conf (cookie-sticky), on this machine.

Looks like bench._common.Server to the load client (port, cpu_seconds, rss_bytes, summed over
the replicas), so a class can be run against a single server or against the replicas alike.
nginx itself is not counted: it is the load balancer, not the app.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench._common import Server, free_port  # noqa: E402

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def nginx_available() -> bool:
    return Path(NGINX).exists()


def nginx_config(upstreams: list[int], port: int, workdir: Path) -> str:
    """deploy/nginx.conf with its upstream and port filled in, inside a minimal top-level config."""
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    servers = "\n".join(f"    server 127.0.0.1:{p};" for p in upstreams)
    site = site.replace("    server explorer:8501;", servers, 1).replace("listen 80;", f"listen 127.0.0.1:{port};", 1)
    if servers not in site or f"listen 127.0.0.1:{port};" not in site:
        raise RuntimeError("deploy/nginx.conf no longer has the lines this script fills in")
    temp = "\n".join(f"    {kind}_temp_path {workdir / kind};" for kind in
                     ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"pid {workdir / 'nginx.pid'};\nerror_log {workdir / 'error.log'} warn;\nworker_processes 1;\n"
            f"events {{ worker_connections 4096; }}\nhttp {{\n    access_log off;\n{temp}\n{site}\n}}\n")


class Replicas:
    def __init__(self, k: int, script: str = "app.py"):
        self.servers = [Server(script) for _ in range(k)]
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="nginx_replicas_"))
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Replicas":
        for s in self.servers:
            s.start()
        for s in self.servers:
            s.wait_healthy()
        conf = self.workdir / "nginx.conf"
        conf.write_text(nginx_config([s.port for s in self.servers], self.port, self.workdir))
        self.proc = subprocess.Popen([NGINX, "-c", str(conf), "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                                     stderr=open(self.workdir / "stderr.log", "wb"))
        deadline = time.perf_counter() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                if self.proc.poll() is not None or time.perf_counter() > deadline:
                    self.__exit__()
                    raise RuntimeError("nginx did not start: " + (self.workdir / "stderr.log").read_text()[-2000:])
                time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        for s in self.servers:
            s.stop()

    def cpu_seconds(self) -> float:
        return sum(s.cpu_seconds() for s in self.servers)

    def rss_bytes(self) -> int:
        return sum(s.rss_bytes() for s in self.servers)

    def sticky_check(self, page: str = "grid", tries: int = 12) -> dict:
        """Does a student stay on one replica? A picture (st.image) lives in the memory of the replica
        that drew it: open the page over a websocket with nginx's cookie, then fetch the picture
        `tries` times with the same cookie (all must succeed) and with as many fresh cookies (on
        other replicas it is not there: some fail when K > 1)."""
        from bench._common import Session

        def get(url: str, cookie: str | None) -> tuple[int, str]:
            req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, r.headers.get("Set-Cookie", "")
            except urllib.error.HTTPError as err:
                return err.code, ""

        base = f"http://127.0.0.1:{self.port}"
        _, set_cookie = get(f"{base}/{page}", None)
        cookie = set_cookie.split(";")[0]
        with Session(self.port, page=page, cookie=cookie) as s:
            run = s.rerun()
            urls = [img.url for el in run.of_type("imgs") for img in el.imgs]
            if not urls:
                raise RuntimeError(f"/{page} drew no picture to follow")
            url = base + urls[0] if urls[0].startswith("/") else base + "/" + urls[0]
            same = [get(url, cookie)[0] for _ in range(tries)]
            fresh = [get(url, None)[0] for _ in range(tries)]
        return {"cookie": cookie, "same_cookie_ok": sum(c == 200 for c in same), "tries": tries,
                "fresh_cookie_ok": sum(c == 200 for c in fresh)}
