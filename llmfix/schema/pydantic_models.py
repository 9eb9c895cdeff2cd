"""Pydantic models as schemas: a ``BaseModel`` subclass, a ``TypeAdapter``, a dataclass or a
``TypedDict`` given where a JSON Schema goes.

The model's JSON Schema (``TypeAdapter.json_schema()``) drives extraction, selection and
schema repair like any schema; then Pydantic itself validates the value, so that what the
JSON Schema cannot say (a ``field_validator``, a ``model_validator``, a strict model's
rules) is checked too. Each Pydantic error becomes a ``schema.pydantic`` diagnostic with
the JSON Pointer of the value it is about (the pipeline gives it a span, like every schema
error), and a usable result carries the validated instance (:attr:`Result.parsed
<llmfix.model.Result.parsed>`).

Pydantic is imported only when a model is given: :func:`is_model` tells a model from a
schema by what is already imported. A model reference on the command line
(``module:Model`` or ``path/to/file.py:Model``) is loaded by :func:`load_model_ref`;
loading one runs the module's code, which is why an untrusted project file may not name
one (:func:`llmfix.run.trust.untrusted_view`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmfix import codes
from llmfix.errors import SchemaError
from llmfix.jsontext import dumps
from llmfix.model import Diagnostic, Result
from llmfix.schema.load import BUILTIN_PREFIX, SchemaSpec
from llmfix.schema.validate import SchemaValidator

__all__ = [
    "ModelValidator",
    "is_model",
    "is_model_ref",
    "load_model_ref",
    "model_validator",
    "validator_for_ref",
    "with_instance",
]

INSTALL_HINT = "install Pydantic (pip install 'llmfix[pydantic]')"

# ``package.module:Name`` or ``path/to/file.py:Name`` (a dotted attribute path after the colon).
_MODEL_REF = re.compile(r"^(?P<target>[^:]+\.py|[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_][\w.]*)$")


def is_model(schema: Any) -> bool:
    """Whether ``schema`` is a type Pydantic validates (or a ``TypeAdapter``) rather than a
    JSON Schema. Imports nothing: a ``BaseModel`` or ``TypeAdapter`` exists only where
    Pydantic is imported already; a dataclass or ``TypedDict`` is told by its class."""
    if schema is None or isinstance(schema, (dict, bool, str, os.PathLike, SchemaSpec)):
        return False
    pydantic = sys.modules.get("pydantic")
    if isinstance(schema, type):
        if dataclasses.is_dataclass(schema) or _is_typeddict(schema):
            return True
        return pydantic is not None and issubclass(schema, pydantic.BaseModel)
    return pydantic is not None and isinstance(schema, pydantic.TypeAdapter)


def _is_typeddict(cls: type) -> bool:
    import typing

    if typing.is_typeddict(cls):
        return True
    extensions = sys.modules.get("typing_extensions")
    return extensions is not None and bool(extensions.is_typeddict(cls))


def model_name(schema: Any) -> str:
    """How a model is named in messages: ``module.Name`` (a ``TypeAdapter``: its type)."""
    target = getattr(schema, "_type", schema)  # TypeAdapter keeps the type it adapts there
    name = getattr(target, "__qualname__", None)
    if not isinstance(name, str):
        return repr(target)
    module = getattr(target, "__module__", None)
    return f"{module}.{name}" if module and module != "builtins" else name


class ModelValidator(SchemaValidator):
    """A :class:`SchemaValidator` of the model's JSON Schema that also asks Pydantic.

    :meth:`errors` lists the JSON Schema's errors first; only a value the JSON Schema
    accepts is validated by Pydantic (its errors would mostly repeat the schema's).
    """

    def __init__(
        self,
        model: Any,
        adapter: Any,
        spec: SchemaSpec,
        *,
        allow_remote: bool,
        ref: str | None = None,
    ) -> None:
        super().__init__(spec, allow_remote=allow_remote)
        self.model = model
        self.adapter = adapter
        self.ref = ref  # ``module:Name`` or ``file.py:Name`` when loaded from one
        self._last: tuple[str, Any, list[Diagnostic]] | None = None  # JSON text, outcome

    def is_valid(self, value: Any) -> bool:
        return super().is_valid(value) and not self._validate(value)[1]

    def errors(self, value: Any) -> list[Diagnostic]:
        return super().errors(value) or self._validate(value)[1]

    def instance(self, value: Any) -> Any:
        """The validated instance of ``value`` (``None`` when Pydantic rejects it)."""
        return self._validate(value)[0]

    def _validate(self, value: Any) -> tuple[Any, list[Diagnostic]]:
        """Pydantic's verdict on ``value`` in JSON mode (the value is JSON a model wrote, so
        a strict model takes a date string, as it would from ``model_validate_json``); the
        last one is kept, since a repair asks ``is_valid`` and then for the instance."""
        try:
            text = dumps(value)
        except (TypeError, ValueError, RecursionError) as error:
            problem = codes.SCHEMA_PYDANTIC.at(f"/: cannot be validated: {error}", pointer="")
            return None, [problem]
        last = self._last
        if last is not None and last[0] == text:
            return last[1], last[2]
        # (start-up: Pydantic is imported already: the adapter was made with it)
        from pydantic import ValidationError

        try:
            found = self.adapter.validate_json(text)
            problems: list[Diagnostic] = []
        except ValidationError as failure:
            found = None
            problems = [_diagnostic(error, value) for error in failure.errors(include_url=False)]
        self._last = (text, found, problems)
        return found, problems

    def __reduce__(self) -> tuple[Any, ...]:
        # A process pool's worker builds it again: from the reference it was loaded from
        # (a file's module exists only in the process that loaded it), else from the model
        # (pickled by reference).
        if self.ref is not None:
            return (validator_for_ref, (self.ref, self.allow_remote))
        return (model_validator, (self.model, self.allow_remote))

    def __repr__(self) -> str:
        return f"ModelValidator({self.spec.source!r})"


@functools.lru_cache(maxsize=32)
def model_validator(model: Any, allow_remote: bool = False) -> ModelValidator:
    """The validator of a Pydantic model, dataclass, ``TypedDict`` or ``TypeAdapter``
    (the last few kept: making one costs far more than validating with it)."""
    adapter, spec = _adapter_and_spec(model)
    return ModelValidator(model, adapter, spec, allow_remote=allow_remote)


def validator_for_ref(ref: str, allow_remote: bool = False) -> ModelValidator:
    """The validator of the type a ``module:Name`` or ``file.py:Name`` reference names
    (:func:`load_model_ref`: runs the module's code)."""
    model = load_model_ref(ref)
    adapter, spec = _adapter_and_spec(model)
    return ModelValidator(model, adapter, spec, allow_remote=allow_remote, ref=ref)


def _adapter_and_spec(model: Any) -> tuple[Any, SchemaSpec]:
    """Pydantic's ``TypeAdapter`` of ``model`` and its JSON Schema as a spec."""
    name = model_name(model)
    try:
        import pydantic
    except ImportError:
        raise SchemaError(
            name, f"a Python type as a schema needs Pydantic: {INSTALL_HINT}"
        ) from None
    try:
        adapter = model if isinstance(model, pydantic.TypeAdapter) else pydantic.TypeAdapter(model)
        schema = adapter.json_schema()
    except pydantic.PydanticUserError as error:
        raise SchemaError(name, f"Pydantic cannot use this type: {_one_line(error)}") from None
    except Exception as error:  # a model's own code may fail anyhow; never leak it
        problem = _one_line(f"{type(error).__name__}: {error}")
        raise SchemaError(name, f"cannot make a JSON Schema of this type: {problem}") from None
    spec = SchemaSpec(schema=schema, source=name, shape="json-schema", name=None, base_uri=None)
    return adapter, spec


def with_instance(result: Result, validator: Any) -> Result:
    """``result`` with :attr:`~llmfix.model.Result.parsed` filled in: the validated instance,
    when ``validator`` is a :class:`ModelValidator` and the value is usable."""
    if not isinstance(validator, ModelValidator) or not result.ok or result.values is not None:
        return result
    found = validator.instance(result.value)
    return result if found is None else dataclasses.replace(result, parsed=found)


def _diagnostic(error: Any, value: Any) -> Diagnostic:
    """One Pydantic error as a diagnostic, pointing at the deepest part of its location that
    is in the value (a missing field's error points at the object that lacks it)."""
    loc: Sequence[Any] = error.get("loc", ())
    tokens: list[str | int] = []
    node = value
    for part in loc:
        if not _holds(node, part):
            break
        node = node[part]
        tokens.append(part)
    pointer = "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)
    rest = [str(part) for part in loc[len(tokens) :]]
    message = f"{pointer or '/'}: {_one_line(error.get('msg', 'invalid'))}"
    if rest:
        message += f" (at {'.'.join(rest)})"
    data = {
        "type": str(error.get("type", "")),
        "loc": [p if isinstance(p, int) else str(p) for p in loc],
    }
    return codes.SCHEMA_PYDANTIC.at(
        message,
        pointer=pointer,
        hint="the model's own validation (Pydantic) rejects this value",
        data=data,
    )


def _holds(node: Any, part: Any) -> bool:
    """Whether ``node[part]`` is a part of a JSON value (not a union member's tag)."""
    if isinstance(node, dict):
        return isinstance(part, str) and part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())[:300]


# ---------------------------------------------------------------------- references (the CLI)


def is_model_ref(ref: str) -> bool:
    """Whether a ``--schema`` value names a Python type (``module:Name``, ``file.py:Name``)
    rather than a schema file: it has that form and is not a file that exists."""
    if ref.startswith(BUILTIN_PREFIX) or _MODEL_REF.match(ref) is None:
        return False
    return not Path(ref).expanduser().is_file()


def load_model_ref(ref: str) -> Any:
    """The type a ``module:Name`` or ``path/to/file.py:Name`` reference names.

    Runs the module's code (an import does): the caller decides whether the reference comes
    from someone the user trusts. A module name is looked up from the current directory
    first, then the installed packages (as ``python -m`` would). Every failure is a
    one-line :class:`SchemaError` naming the reference.
    """
    match = _MODEL_REF.match(ref)
    if match is None:
        raise SchemaError(ref, "expected module:Name or path/to/file.py:Name")
    target, attr = match.group("target"), match.group("attr")
    try:
        module = _load_file(ref, target) if target.endswith(".py") else _load_module(ref, target)
        found: Any = module
        for part in attr.split("."):
            found = getattr(found, part)
    except SchemaError:
        raise
    except AttributeError:
        raise SchemaError(ref, f"{target} has no attribute {attr}") from None
    except Exception as error:  # the module's own code failed: one line, no traceback
        problem = _one_line(f"{type(error).__name__}: {error}")
        raise SchemaError(ref, f"importing {target} failed: {problem}") from None
    if not is_model(found):
        raise SchemaError(
            ref, f"{attr} is not a Pydantic model, TypeAdapter, dataclass or TypedDict"
        )
    return found


def _load_module(ref: str, name: str) -> Any:
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            raise SchemaError(ref, f"no module named {error.name}") from None
        raise


def _load_file(ref: str, target: str) -> Any:
    path = Path(target).expanduser()
    if not path.is_file():
        raise SchemaError(ref, f"no such file: {target}")
    resolved = str(path.resolve())
    # One module per file, named after its path: loading it twice gives the same classes.
    name = "_llmfix_model_" + re.sub(r"\W", "_", resolved)
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise SchemaError(ref, f"cannot load {target} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses and Pydantic look their module up by name)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
