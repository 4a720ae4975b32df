"""The base class of every generated model."""

from pydantic import BaseModel, ConfigDict


class OpenResponsesModel(BaseModel):
    """A model that keeps fields it does not know, so vendor extensions round-trip unchanged.

    Open Responses lets providers add vendor-prefixed fields to core objects; clients must not
    drop them. Fields whose JSON name is not a Python name (`anthropic:mcp_servers`) get a Python
    name (`anthropic_mcp_servers`) and keep the JSON one as their alias. Input is read by JSON name only: an
    unknown field that happens to be spelt like a Python name stays an unknown field, so it
    round-trips too. Dumps write JSON names.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=False,
        validate_by_alias=True,
        serialize_by_alias=True,
        protected_namespaces=(),  # a field named `model_dump` is renamed (`model_dump_`), never shadows
    )


class UnknownType(OpenResponsesModel):
    """A value whose `type` this version of the spec does not know; every field is kept.

    Clients must ignore types they do not understand and send custom items back unchanged, so
    these parse without error and dump back exactly as they came.
    """

    type: str


class UnknownItem(UnknownType):
    """An item of a type this spec does not define, such as another vendor's `zeta:thing`."""


class UnknownContent(UnknownType):
    """A content part of a type this spec does not define."""


class UnknownAnnotation(UnknownType):
    """An annotation of a type this spec does not define, such as OpenAI's `file_citation`."""


class UnknownTool(UnknownType):
    """A tool of a type this spec does not define."""


class UnknownEvent(UnknownType):
    """A streaming event of a type this spec does not define."""
