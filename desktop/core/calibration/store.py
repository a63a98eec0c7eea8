"""Calibrations kept per model in the data folder, each entry checked on reading."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from desktop.core.calibration.card import Calibration
from desktop.core.storage.jsonfile import DamagedFile, read_json, write_json

CALIBRATIONS_FILE = "calibrations.json"  # in the data folder

_COUNT = {"type": "integer", "minimum": 0}
_SCORE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "track": {"enum": ["constrained", "emulated", "native"]},
        **{name: _COUNT for name in ("due_right", "due", "parallel_right", "parallel",
                                     "quiet_right", "quiet", "invalid", "cut_off", "calls",
                                     "arguments_right", "answered_in_full",
                                     "left_unasked")},
        **{name: {"type": "number", "minimum": 0} for name in ("tokens_per_call",
                                                                "seconds_per_call", "score")},
    },
    "required": ["track", "due_right", "due", "parallel_right", "parallel", "quiet_right",
                 "quiet", "invalid", "cut_off", "calls", "tokens_per_call", "seconds_per_call",
                 "score"],
    "additionalProperties": False,
}  # fmt: skip
_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "model": {"type": "string"},
        "day": {"type": "string"},
        "track": {"enum": ["constrained", "emulated", "native"]},
        "bar": {"type": "number", "minimum": 0, "maximum": 1},
        "scores": {"type": "array", "items": _SCORE, "minItems": 1},
        "cases": _COUNT,
        "seconds": {"type": "number", "minimum": 0},
        "odds_reported": {"type": "boolean"},
        # Newer entries; an entry without it has one bar for every request.
        "later_bar": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        # Since method 2; entries without them: no arguments' bar, method 1.
        "arguments_bar": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "method": {"type": "integer", "minimum": 1},
        # Since method 4; entries without them list the tools as JSON. A form this version
        # does not know is read as JSON too (`Calibration.from_dict`).
        "tool_form": {"type": "string", "maxLength": 40},
        "form_scores": {
            "type": "array",
            "maxItems": 10,
            "items": {
                "type": "array",
                "prefixItems": [{"type": "string", "maxLength": 40}, {"type": "number"}],
                "minItems": 2,
                "maxItems": 2,
            },
        },
    },
    "required": ["model", "day", "track", "bar", "scores", "cases", "seconds"],
    "additionalProperties": False,
}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "version": {"const": 1},
        "models": {"type": "object", "additionalProperties": {"type": "object"}},
    },
    "required": ["version", "models"],
}


@dataclass
class CalibrationStore:
    """The calibrations of every model used with tools, in one JSON file of the data folder.
    A damaged file is set aside (its problem in `problem`) and the models calibrate again."""

    path: Path | None  # None: kept in memory only (tests, a one-off run)
    problem: str | None = None
    _entries: dict[str, Calibration] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path is None:
            return
        try:
            raw = read_json(self.path)
            jsonschema.validate(raw, _SCHEMA)
        except FileNotFoundError:
            return
        except (OSError, DamagedFile, jsonschema.ValidationError) as exc:
            reason = exc.message if isinstance(exc, jsonschema.ValidationError) else exc
            self.problem = f"{self.path.name} could not be read ({reason}); calibrating again."
            return
        for key, entry in raw["models"].items():
            try:
                jsonschema.validate(entry, _ENTRY)
                calibration = Calibration.from_dict(entry)
                calibration.chosen  # noqa: B018 (the chosen track must be among the scores)
                self._entries[key] = calibration
            except (jsonschema.ValidationError, StopIteration, TypeError, ValueError) as exc:
                why = exc.message if isinstance(exc, jsonschema.ValidationError) else str(exc)
                self.problem = (
                    f"{self.path.name}: {key[:120]} could not be read ({why}); calibrating again."
                )

    def get(self, model: str) -> Calibration | None:
        return self._entries.get(model)

    def put(self, calibration: Calibration) -> None:
        self._entries[calibration.model] = calibration
        if self.path is None:
            return
        data = {"version": 1, "models": {k: v.to_dict() for k, v in self._entries.items()}}
        write_json(self.path, data)


def model_key(backend: str, model: str, file: Path | None = None) -> str:
    """Whom a calibration belongs to: a model file by its name and size (a requantized
    file is another model), a served model by its backend and name."""
    if file is not None:
        try:
            return f"file:{file.name}:{file.stat().st_size}"
        except OSError:
            return f"file:{file.name}"
    return f"{backend}:{model}"
