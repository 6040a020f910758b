"""One headless Chromium tab driven over the DevTools protocol (loopback only), for the report page tests
and the page-open benchmark."""

import json
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
]


class Page:
    """One headless Chromium tab; `evaluate` runs JavaScript in it and returns the JSON-able result."""

    def __init__(self, chromium: str, url: str, profile: Path) -> None:
        self.process = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = self._debugging_port(profile / "DevToolsActivePort")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            target = next(t for t in json.load(response) if t["type"] == "page")
        self.socket = connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
        self.next_id = 0

    def _debugging_port(self, port_file: Path, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if port_file.exists() and port_file.read_text().strip():
                return int(port_file.read_text().split()[0])
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its debugging port")

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one DevTools protocol command to the tab and return its result."""
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=30))
            if message.get("id") == self.next_id:
                return message["result"]

    def evaluate(self, expression: str) -> Any:
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        result = self.call("Runtime.evaluate", params)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression!r} raised {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
