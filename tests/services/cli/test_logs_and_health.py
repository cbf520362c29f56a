"""`hstack logs SERVICE` shows what `hstack run` kept of a service's output; `hstack health SERVICE` backs the
compose healthchecks of the workers and the curator."""

from __future__ import annotations

import io
import socket
import threading

import pytest

from services.cli import logs
from services.cli.children import RotatingLog
from services.cli.main import main
from shared.ops import heartbeats
from shared.messaging.connections import get_redis
from shared.config import get_settings
from tests.support.waiting import wait_until


@pytest.fixture
def logs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    directory = tmp_path / "logs"
    directory.mkdir()
    return directory


def test_logs_prints_the_last_lines_of_a_service(logs_dir, capsys):
    """Under `make run` the services' output flooded the console; it is kept in DATA_DIR/logs and
    `hstack logs SERVICE` shows it."""
    (logs_dir / "worker.log").write_text("".join(f"line {i}\n" for i in range(100)))

    assert main(["logs", "worker", "-n", "3"]) == 0
    assert capsys.readouterr().out == "line 97\nline 98\nline 99\n"


def test_logs_of_an_unknown_service_names_the_known_ones(logs_dir, capsys):
    (logs_dir / "api.log").write_text("x\n")

    assert main(["logs", "wroker"]) == 1
    err = capsys.readouterr().err
    assert "no log for 'wroker'" in err and "api" in err


def test_logs_follow_prints_new_lines_across_a_rotation(logs_dir):
    log = RotatingLog(logs_dir / "api.log", max_bytes=64, backups=1)
    log.write_line(b"before follow")
    out, stop = io.StringIO(), threading.Event()
    start_at = (logs_dir / "api.log").stat().st_size
    follower = threading.Thread(target=logs.follow, args=(logs_dir / "api.log", out, stop, start_at), daemon=True)
    follower.start()
    try:
        for i in range(12):  # 12 x 11 bytes: rolls over more than once
            log.write_line(f"new line {i}".encode())
            wait_until(lambda: f"new line {i}\n" in out.getvalue(), timeout=10, what=f"line {i} to be followed")
    finally:
        stop.set()
        follower.join(5)
        log.close()
    assert "before follow" not in out.getvalue()
    assert (logs_dir / "api.log.1").exists() and not (logs_dir / "api.log.2").exists(), "bounded: one backup"


def test_a_rotating_log_stays_within_its_size(tmp_path):
    log = RotatingLog(tmp_path / "worker.log", max_bytes=1000, backups=2)
    for i in range(500):
        log.write_line(b"x" * 40)
    log.close()
    sizes = sorted(p.stat().st_size for p in tmp_path.iterdir())
    assert len(sizes) == 3 and max(sizes) <= 1000


def test_health_is_ok_while_this_hosts_service_announces_itself(capsys):
    """compose's worker/reviewer/curator healthchecks run `hstack health SERVICE`: it must exist and read the
    heartbeat the service writes for this host."""
    r = get_redis(get_settings())
    service = f"health-probe-{socket.gethostname()[:8]}"
    heartbeats.announce(r, service, ttl_seconds=30)
    try:
        assert main(["health", service]) == 0
        assert f"{service} on {socket.gethostname()} is healthy" in capsys.readouterr().out
        assert main(["health", service, "--host", "another-container"]) == 1
        assert "no heartbeat from" in capsys.readouterr().err
    finally:
        r.delete(heartbeats.PREFIX + heartbeats.instance_id(service))


def test_health_fails_when_redis_does_not_answer(monkeypatch, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{port}/0")

    assert main(["health", "worker"]) == 1
    assert "Redis does not answer" in capsys.readouterr().err
