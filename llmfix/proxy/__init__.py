"""`llmfix proxy`: a guard between an application and its model API.

The proxy forwards each request to the upstream API and checks the answer on its way back,
with the schema the request itself carries (``response_format``, ``text.format``,
``tools``) or one it was started with:

- :mod:`llmfix.proxy.expect` — what a request expects of its answer (the schema, the tools);
- :mod:`llmfix.proxy.verdict` — a response's verdict: status, repairs, gate failures;
- :mod:`llmfix.proxy.whole` — a whole (not streamed) response checked and repaired;
- :mod:`llmfix.proxy.streams` — a streamed response: text passes, tool calls are held
  until complete and valid, the last event carries the verdict;
- :mod:`llmfix.proxy.exchanges` — the JSONL log of every exchange (redacted);
- :mod:`llmfix.proxy.metrics` — the Prometheus counters of ``/metrics``;
- :mod:`llmfix.proxy.app` — the ASGI application, its server (uvicorn) and its upstream
  client (aiohttp);
- :mod:`llmfix.proxy.workers` — several processes on one port (``--workers``), their
  counters added up.

Only :mod:`llmfix.proxy.app` and :mod:`llmfix.proxy.workers` need the ``proxy`` extra
(``pip install 'llmfix[proxy]'``); this package imports nothing, so that ``llmfix --help``
does not pay for it.
"""
