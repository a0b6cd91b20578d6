"""The typed summary of every command (``summary.json``): written by the capability, read by ``runs``,
``report`` and ``compare``. One module per command; :data:`BY_COMMAND` names each command's model."""
