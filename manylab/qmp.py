"""A minimal client of QEMU's machine protocol (QMP) over a unix socket: commands in, their
returns out, asynchronous events skipped."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from manylab.errors import LabError


class QmpError(LabError):
    """QEMU refused a command, or its socket closed."""


class Qmp:
    def __init__(self, path: Path, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._socket.connect(str(path))
                break
            except (FileNotFoundError, ConnectionRefusedError) as error:
                self._socket.close()
                if time.monotonic() > deadline:
                    raise QmpError(f"QMP socket {path}: {error}") from error
                time.sleep(0.05)
        self._socket.settimeout(timeout_s)
        self._reader = self._socket.makefile("r", encoding="utf-8")
        self._message()  # the greeting
        self.execute("qmp_capabilities")

    def _message(self) -> dict[str, Any]:
        line = self._reader.readline()
        if not line:
            raise QmpError("QMP: QEMU closed the socket")
        message: dict[str, Any] = json.loads(line)
        return message

    def execute(self, command: str, **arguments: Any) -> Any:
        request: dict[str, Any] = {"execute": command}
        if arguments:
            request["arguments"] = arguments
        self._socket.sendall(json.dumps(request).encode() + b"\n")
        while True:
            message = self._message()
            if "event" in message:
                continue
            if "error" in message:
                raise QmpError(f"QMP {command}: {message['error'].get('desc', message)}")
            return message.get("return")

    def close(self) -> None:
        self._reader.close()
        self._socket.close()
