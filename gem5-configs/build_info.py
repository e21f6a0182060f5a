"""Prints the gem5 binary's version and build options as one JSON line (the lab records the
version and checks the ISA and protocol): `gem5.fast --quiet build_info.py`."""

import json

import _m5.core
from m5.defines import buildEnv

print(
    "MANYLAB-GEM5-BUILD "
    + json.dumps(
        {
            "version": _m5.core.gem5Version,
            "build": {k: str(v) for k, v in sorted(buildEnv.items())},
        }
    )
)
