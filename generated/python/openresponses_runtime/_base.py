"""The base class of every generated model."""

from pydantic import BaseModel, ConfigDict


class OpenResponsesModel(BaseModel):
    """A model that keeps fields it does not know, so vendor extensions round-trip unchanged.

    Open Responses lets providers add vendor-prefixed fields to core objects; clients must not
    drop them. `populate_by_name` lets code use Python names where a JSON name is not one.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)
