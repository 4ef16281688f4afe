"""Fixtures for the server integration tests: each module starts its own real server process(es).

`server_factory(*extra_flags, api_key=None)` starts `$SE_BINARY serve --model smollm2-135m ...`
on a free port and waits for `GET /health` == 200 (60 s); at the end of the module every server
it started gets SIGTERM and must exit 0 within 40 s. A failing test gets the live servers' logs
attached to its report."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from server_process import API_KEY, ServerProcess  # noqa: E402

_live_servers: list[ServerProcess] = []


@pytest.fixture(scope="module")
def server_factory():
    servers: list[ServerProcess] = []

    def make(*extra_flags: str, api_key: str | None = None) -> ServerProcess:
        args = list(extra_flags)
        if api_key is not None:
            args += ["--api-key", api_key]
        server = ServerProcess(args=args, api_key=api_key)
        servers.append(server)
        server.start()
        _live_servers.append(server)
        return server

    yield make

    failures = []
    for server in servers:
        if server in _live_servers:
            _live_servers.remove(server)
        if server.proc is None:
            continue
        try:
            server.stop()
        except AssertionError as e:
            failures.append(str(e))
        else:
            server.cleanup_files()
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


@pytest.fixture(scope="module")
def api_key() -> str:
    return API_KEY


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when == "call":
        for server in _live_servers:
            report.sections.append((f"server on port {server.port} {' '.join(server.args)}",
                                    server.logs(tail=8000)))
