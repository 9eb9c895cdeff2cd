"""The repair pipeline for one answer: ``normalize`` → ``extract`` (with
:mod:`llmfix.formats`) → parse (:mod:`llmfix.parse`) → ``select`` → ``finish`` (validate and
schema repair), with ``partial`` for cut-off answers, ``refusals`` and ``responses`` (what
an API response says: stop reason, refusal, model). ``core`` runs the stages in order."""
