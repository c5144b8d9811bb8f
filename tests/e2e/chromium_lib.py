"""Headless Chromium driven through the DevTools protocol, for the HTML report test: finds
a browser that really runs (Debian's `chromium`, which scripts/e2e-setup installs, or
another on the PATH; never a snap stub), starts it with a throw-away profile and
`--remote-debugging-port=0`, reads the port from the profile's DevToolsActivePort file and
talks to it over one websocket (websocket-client, in the triton venv) in flat-session mode.

`Chromium.open(path)` loads a page and returns what it logged while loading (uncaught
exceptions, console errors, log entries of level error); `evaluate` runs JavaScript in it;
`screenshot` writes a full-page PNG.
"""

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

# Where Debian and Ubuntu put the browser; $CHROMIUM first when set.
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
LIBEXEC = ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser")


def find_chromium():
    """The path of a Chromium that starts and prints its version, else the test fails
    saying what was tried (scripts/e2e-setup installs Debian's chromium)."""
    tried = []
    names = [os.environ.get("CHROMIUM", "")] + list(CANDIDATES)
    paths = [shutil.which(n) for n in names if n] + list(LIBEXEC)
    for path in dict.fromkeys(p for p in paths if p):
        if not os.access(path, os.X_OK):
            continue
        try:
            probe = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=60,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            tried.append(f"{path}: {error}")
            continue
        out = probe.stdout.strip()
        # Ubuntu's chromium-browser is a shell stub that asks for the snap.
        if probe.returncode == 0 and ("Chromium" in out or "Chrome" in out) and "snap" not in out:
            return path, out.splitlines()[-1]
        tried.append(f"{path}: exit {probe.returncode}: {(out + probe.stderr).strip()[:200]}")
    pytest.fail(
        "No working Chromium found (tried $CHROMIUM, "
        + ", ".join(CANDIDATES + LIBEXEC)
        + (": " + "; ".join(tried) if tried else ": none is installed")
        + "). scripts/e2e-setup installs Debian's `chromium` package: see .venv-e2e/chromium.log."
    )


class DevToolsError(AssertionError):
    pass


class Chromium:
    """One headless browser with one page (a target attached in flat mode)."""

    def __init__(self, exe, log_path, timeout=60):
        self.exe = exe
        self.log_path = Path(log_path)
        self.timeout = timeout
        self.proc = None
        self.ws = None
        self.session = None
        self.events = []
        self._ids = itertools.count(1)

    # -- process and connection

    def __enter__(self):
        import websocket  # websocket-client, installed into the triton venv by e2e-setup

        self.profile = tempfile.mkdtemp(prefix="inferperf-chromium-")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [
                self.exe,
                "--headless=new",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                "--no-sandbox",  # root in a container: the sandbox cannot start
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--mute-audio",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            port_file = Path(self.profile) / "DevToolsActivePort"
            deadline = time.monotonic() + self.timeout
            while True:
                if self.proc.poll() is not None:
                    raise DevToolsError(
                        f"chromium exited with code {self.proc.returncode} before it listened; "
                        f"its log ({self.log_path}) ends with:\n{self.log_tail()}"
                    )
                lines = port_file.read_text().split("\n") if port_file.is_file() else []
                if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                    break
                if time.monotonic() > deadline:
                    raise DevToolsError(
                        f"chromium wrote no DevToolsActivePort in {self.timeout} s; its log "
                        f"({self.log_path}) ends with:\n{self.log_tail()}"
                    )
                time.sleep(0.1)
            url = f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}"
            self.ws = websocket.create_connection(url, timeout=self.timeout, suppress_origin=True)
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call(
                "Target.attachToTarget", {"targetId": target, "flatten": True}
            )["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable", session=self.session)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.ws is not None:
            try:
                self.call("Browser.close", timeout=5)
            except Exception:  # noqa: BLE001 - killed below anyway
                pass
            self.ws.close()
            self.ws = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
            # Helpers (zygote, GPU, crashpad) may outlive the browser: end the group.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc = None
            self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def log_tail(self, lines=30):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- the protocol

    def _receive(self, deadline):
        import websocket

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DevToolsError("no answer from chromium in time")
        self.ws.settimeout(remaining)
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException as error:
            raise DevToolsError(
                f"no answer from chromium in time; its log ends with:\n{self.log_tail()}"
            ) from error

    def call(self, method, params=None, session=None, timeout=None):
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        message = {"id": next(self._ids), "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == message["id"]:
                if "error" in answer:
                    raise DevToolsError(f"{method} failed: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self.events.append(answer)

    def page(self, method, params=None, timeout=None):
        return self.call(method, params, session=self.session, timeout=timeout)

    def wait_event(self, method, since, timeout=None):
        """The first `method` event of the page from events[since:] on, waiting for it."""
        deadline = time.monotonic() + (timeout or self.timeout)
        seen = since
        while True:
            for event in self.events[seen:]:
                if event["method"] == method and event.get("sessionId") == self.session:
                    return event
            seen = len(self.events)
            answer = self._receive(deadline)
            if "method" in answer:
                self.events.append(answer)

    # -- pages

    def open(self, path, width=1400, height=900):
        """Loads a file and waits for its load event; returns the errors it logged while
        loading, each as one line (uncaught exceptions, console.error/assert, browser log
        entries of level error)."""
        self.page(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        start = len(self.events)
        result = self.page("Page.navigate", {"url": Path(path).resolve().as_uri()})
        if result.get("errorText"):
            raise DevToolsError(f"navigating to {path} failed: {result['errorText']}")
        self.wait_event("Page.loadEventFired", start)
        # Whatever the page logs right after its load event lands too.
        self.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 100)))")
        return self.errors(start)

    def errors(self, since=0):
        found = []
        for event in self.events[since:]:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                found.append(f"uncaught exception: {text}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
                found.append(f"console.{params['type']}: {' '.join(map(str, args))}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                entry = params["entry"]
                found.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")
        return found

    def evaluate(self, expression):
        """The value of a JavaScript expression (awaited when it is a promise)."""
        result = self.page(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise DevToolsError(f"{expression[:80]}… threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path, width=1400):
        """A PNG of the whole page: the viewport is set to the page's full height first."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
        self.page(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        shot = self.page(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True},
            timeout=120,
        )
        data = base64.b64decode(shot["data"])
        Path(path).write_bytes(data)
        return width, height, len(data)
