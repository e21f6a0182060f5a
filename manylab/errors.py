"""The lab's one error type: a one-line message that names the file and the fix."""


class LabError(Exception):
    """An error the user can act on; the CLI prints `manylab: <message>` and exits non-zero."""
