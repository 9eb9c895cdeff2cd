"""The repair pipeline for one answer: ``normalize`` → ``extract`` (with
:mod:`llmfix.formats`) → parse (:mod:`llmfix.parse`) → ``select`` → ``finish`` (validate and
schema repair), with ``guided_step`` (schema-guided reading, :mod:`llmfix.guided`),
``partial`` for cut-off answers, ``refusals`` and ``stops`` (what an API response says of
its answer: cut off, refused, which model). ``core`` runs the stages in order."""
