"""What the client does with an answer or an event that breaks the spec's schema.

Real servers send fields older or newer than the spec (OpenAI's `response.created` without
`completed_at`, say), so by default ("report") such a value is passed on as it came, built as far
as its fields allow, and reported: in the stream's `issues`, and to the client's `on_invalid`.
`validate="strict"` raises `APIResponseValidationError` instead, naming the event's type, the
field's path and what is wrong.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ._errors import APIResponseValidationError, ConfigurationError

__all__ = ["InvalidData", "SchemaIssue", "Validation", "ValidationMode", "lenient", "schema_issues"]

ValidationMode = Literal["report", "strict"]
MODES = ("report", "strict")


@dataclass(frozen=True, slots=True)
class SchemaIssue:
    """Where a value breaks the schema (`path` dotted, as `response.output.0.status`) and how."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message}"


@dataclass(frozen=True, slots=True)
class InvalidData:
    """An answer or event that broke the schema, as `on_invalid` is told of it."""

    type: str | None  # the event's type; None for a whole answer
    sequence_number: int | None
    issues: tuple[SchemaIssue, ...]
    message: str
    value: Any  # as it came

    def __str__(self) -> str:
        return self.message


def checked_mode(mode: str) -> str:
    if mode not in MODES:
        raise ConfigurationError(f'validate must be "report" or "strict", not {mode!r}')
    return mode


def schema_issues(exc: ValidationError, tag: str | None = None) -> tuple[SchemaIssue, ...]:
    """What `exc` says, one issue per error; `tag`, the tagged union's member a path starts with, left out."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    paths = [e["loc"][1:] if tag is not None and e["loc"][:1] == (tag,) else e["loc"] for e in errors]
    return tuple(SchemaIssue(".".join(str(p) for p in path), e["msg"]) for path, e in zip(paths, errors, strict=True))


def describe(issues: tuple[SchemaIssue, ...], limit: int = 3) -> str:
    shown = "; ".join(str(issue) for issue in issues[:limit])
    return shown + (f" (+{len(issues) - limit} more)" if len(issues) > limit else "")


class Validation:
    """The checks of one answer: its mode, whom to tell, and what was reported so far."""

    def __init__(
        self,
        mode: str = "report",
        on_invalid: Callable[[InvalidData], Any] | None = None,
        *,
        status_code: int | None = None,
        request_id: str | None = None,
    ):
        self.mode = checked_mode(mode)
        self.on_invalid = on_invalid
        self.status_code = status_code
        self.request_id = request_id
        self.reports: list[InvalidData] = []

    def check(self, model: type[BaseModel], data: Any, subject: str) -> Any:
        """`data` (JSON text, bytes or a value) as `model`; if it breaks the schema, reported (and built leniently)
        or raised."""
        try:
            if isinstance(data, bytes | str):
                return model.model_validate_json(data)
            return model.model_validate(data)
        except ValidationError as exc:
            try:
                value = json.loads(data) if isinstance(data, bytes | str) else data
            except ValueError as error:  # not JSON at all: nothing to pass on, in either mode
                raise APIResponseValidationError(
                    f"{subject} is not JSON: {error}",
                    body=data,
                    status_code=self.status_code,
                    request_id=self.request_id,
                ) from error
            self.invalid(value, schema_issues(exc), subject=subject, cause=exc)
            return lenient(model, value)

    def invalid(
        self,
        value: Any,
        issues: tuple[SchemaIssue, ...],
        *,
        subject: str | None = None,
        event_type: str | None = None,
        sequence_number: int | None = None,
        cause: Exception | None = None,
    ) -> None:
        """Report, or in strict mode raise, that `value` breaks the schema."""
        if subject is None:
            at = "" if sequence_number is None else f" (sequence_number {sequence_number})"
            subject = f"event {event_type}{at}"
        message = f"{subject} breaks the spec's schema: {describe(issues)}"
        if self.mode == "strict":
            raise APIResponseValidationError(
                message,
                body=value,
                issues=issues,
                event_type=event_type,
                status_code=self.status_code,
                request_id=self.request_id,
            ) from cause
        report = InvalidData(event_type, sequence_number, issues, message, value)
        self.reports.append(report)
        if self.on_invalid is not None:
            self.on_invalid(report)


def lenient(model: type[BaseModel], data: Any) -> Any:
    """`data` as `model`, each field validated on its own: a field that breaks its schema is kept as
    it came (a nested model built the same way), a missing required one is None. Not an object: as is."""
    if not isinstance(data, Mapping):
        return data
    values: dict[str, Any] = {}
    known = set()
    for name, field in model.model_fields.items():
        key = field.alias or name
        known.add(key)
        if key in data:
            values[name] = _field(model, name, data[key])
        elif field.is_required():
            values[name] = None
    extra = {k: v for k, v in data.items() if k not in known and isinstance(k, str)}
    return model.model_construct(set(values) | set(extra), **values, **extra)


def _field(model: type[BaseModel], name: str, value: Any) -> Any:
    try:
        return _adapter(model, name).validate_python(value)
    except ValidationError:
        pass
    inner = _model_of(model.model_fields[name].annotation)
    if inner is not None:
        return lenient(inner, value)
    return value


@functools.cache
def _adapter(model: type[BaseModel], name: str) -> TypeAdapter:
    field = model.model_fields[name]
    metadata = [*field.metadata]
    if field.discriminator is not None:
        metadata.append(Field(discriminator=field.discriminator))
    annotation = Annotated[(field.annotation, *metadata)] if metadata else field.annotation
    return TypeAdapter(annotation)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model `annotation` names, alone or with None (`Model | None`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(models) == 1:
            return _model_of(models[0])
    return None
