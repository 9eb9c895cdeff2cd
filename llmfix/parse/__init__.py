"""The parse stage: one candidate text to a JSON value, every repair reported.

``core`` tries strict JSON, then the lenient parser (:mod:`llmfix.repair_parser`) or, with
``--engine json-repair``, the json-repair library (``json_repair``)."""
