"""The reply schema the local-model tests and perf/local_model.py ask the embedded model for."""

from __future__ import annotations

from typing import Annotated, Literal

from openai.types.shared_params import ResponseFormatJSONSchema
from pydantic import BaseModel, ConfigDict, Field


class Answer(BaseModel):
    """A reply schema made only of constraints the grammar enforces (number bounds are not)."""

    model_config = ConfigDict(extra="forbid")
    answer: str = Field(max_length=80)
    unit: Literal["N", "kg", "m", "s", "none"]
    steps: list[Annotated[str, Field(max_length=80)]] = Field(min_length=1, max_length=3)
    confidence: int = Field(ge=0, le=100)


def json_schema_format(model: type[BaseModel]) -> ResponseFormatJSONSchema:
    """The OpenAI structured-output request field for a pydantic model."""
    return {"type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": model.model_json_schema(), "strict": True}}
