"""JSON Schemas: reading them (``load``), checking them (``check``, ``budget``), validating
values (``validate``, with the compiled ``fast`` path and ``explain`` for messages) and
repairing values to fit them (``repair``, with ``context``, ``coercers``, ``objects`` and
``walk``). A new schema repair rule goes in ``coercers`` or ``objects`` and the
``RULES`` table in ``repair``."""
