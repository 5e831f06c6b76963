"""Runs one of Metacontroller's example hook servers (a `sync.py` written for
the `python:3.11` image) on this machine, unmodified, as its Deployment would
run it in a pod:

    python3 python_hook.py SCRIPT

EXAMPLES_PORTS (JSON, container port -> local port) moves the ports it binds
(80, 8443) to loopback ports of ours; EXAMPLES_ROOT with EXAMPLES_MOUNTS (JSON
list of the container's mount paths) makes the absolute paths it opens under
those mounts (`/certs`, `/token`) the files materialised under EXAMPLES_ROOT.
Standard library only, like the image.
"""

import json
import os
import pathlib
import runpy
import socketserver
import sys

PORTS = {int(k): int(v) for k, v in json.loads(os.environ.get("EXAMPLES_PORTS", "{}")).items()}
ROOT = os.environ.get("EXAMPLES_ROOT", "")
MOUNTS = json.loads(os.environ.get("EXAMPLES_MOUNTS", "[]"))


def remap(arg):
    """A container path under a mount, as the file on this machine."""
    if isinstance(arg, str) and ROOT:
        for mount in MOUNTS:
            if arg == mount or arg.startswith(mount.rstrip("/") + "/"):
                return ROOT + arg
    return arg


# The servers bind ('', 80): loopback and the port we chose instead.
_tcp_init = socketserver.TCPServer.__init__


def _init(self, address, *args, **kwargs):
    host, port = address[0], address[1]
    return _tcp_init(self, ("127.0.0.1", PORTS.get(port, port)), *args, **kwargs)


socketserver.TCPServer.__init__ = _init

# Paths reach files through pathlib (webhook-auth's CERT_DIR, TOKEN_FILE) or
# open(); both see the mounted files. Python 3.11 builds a Path in __new__.
_path_new = pathlib.Path.__new__


def _new(cls, *args, **kwargs):
    return _path_new(cls, *map(remap, args), **kwargs)


pathlib.Path.__new__ = _new
if "__init__" in vars(pathlib.PurePath):  # 3.12 and later build it in __init__
    _path_init = pathlib.PurePath.__init__

    def _pinit(self, *args, **kwargs):
        _path_init(self, *map(remap, args), **kwargs)

    pathlib.PurePath.__init__ = _pinit

_open = open


def _open_remapped(file, *args, **kwargs):
    return _open(remap(file), *args, **kwargs)


import builtins  # noqa: E402

builtins.open = _open_remapped

# Logs straight to our log file, not held in a buffer when it is killed.
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
