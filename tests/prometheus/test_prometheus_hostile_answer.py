"""Whoever answers at the ``--prometheus`` URL may be hostile (a spoofed or compromised
endpoint): an answer nested thousands deep, one cut short past the size the client decodes in
pieces, or one shaped otherwise is refused with one plain line (``PrometheusError``), never a
RecursionError or an IndexError out of the client. The endpoint is a loopback HTTP server
answering the client's query with those bytes: the edge this test fakes."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dltui.transport.prometheus.client import PIECE_CHARS, Client, PrometheusError

HEAD = '{"status":"success","data":{"resultType":"vector","result":['
SERIES = '{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP","gpu":"0","Hostname":"gpu01"},"value":[1767258000,"61"]}'
MANY = ",".join([SERIES] * (2 * PIECE_CHARS // len(SERIES) + 10))  # decoded a piece at a time
DEEP = "[" * 100_000 + "]" * 100_000


def answering(body: bytes):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(
    "answer, words",
    [
        (HEAD + DEEP + "]}}", "nested too deep"),  # small: one json.loads
        (HEAD + MANY + "," + DEEP + "]}}", "nested too deep"),  # its last piece, series by series
        (HEAD + MANY + ",", "not a Prometheus API answer"),  # cut short in its result list
        ('{"status":"success","data":[1]}', "without its data"),
    ],
    ids=["deep", "deep-in-pieces", "cut-short", "no-data"],
)
def test_a_hostile_answer_is_refused_in_one_line(answer, words):
    server = answering(answer.encode())
    try:
        client = Client(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=30)
        with pytest.raises(PrometheusError, match=words) as refused:
            asyncio.run(client.query("DCGM_FI_DEV_GPU_TEMP"))
        assert "\n" not in str(refused.value) and len(str(refused.value)) < 200
    finally:
        server.shutdown()
        server.server_close()
