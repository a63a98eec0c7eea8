"""Which track a provider is put on, from what the model supports and its calibration."""

from __future__ import annotations

from typing import Literal, Protocol

from desktop.core.providers.base import Provider, Track
from desktop.core.providers.probing import CapabilityCache, ProbeResult
from desktop.core.providers.registry import ProbingProvider
from desktop.core.tracks.bars import Bars
from desktop.core.tracks.bars import Calibrated as GateCalibrated
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.native import NativeTools
from desktop.core.tracks.tool_forms import ToolForm


class Calibrated(GateCalibrated, Protocol):
    """What a model's calibration says about its track and its gate (calibration.Calibration)."""

    @property
    def track(self) -> str: ...

    @property
    def tool_form(self) -> ToolForm: ...


async def prepare(
    provider: ProbingProvider,
    track: Track,
    cache: CapabilityCache,
    calibration: Calibrated | None = None,
) -> tuple[Provider, Literal["native", "emulated"], ProbeResult]:
    """Probe (cached), apply the capabilities, and put the provider on its track, judged
    by the model's calibration where it has one."""
    probed = await cache.apply(provider)
    active, chosen = on_track(provider, track, calibration)
    return active, chosen, probed


def on_track(
    provider: Provider, track: Track, calibration: Calibrated | None = None
) -> tuple[Provider, Literal["native", "emulated"]]:
    """The provider to use for a track, and which track that is.

    `emulated` is the default for local models; `auto` takes the track the model's
    calibration chose, else native only where the capabilities say the model supports it;
    `native` forces it. The emulated track's call gate uses the calibrated bars (a first
    request's, one after earlier turns, and one for the arguments of a call under them).
    """
    if calibration is not None and track == "auto":
        native = calibration.track == "native"
    else:
        native = track == "native" or (track == "auto" and provider.capabilities.native_tools)
    if native:
        return NativeTools(provider), "native"
    # Two-phase constrained calls where the backend can constrain its output; the plain
    # emulated track (tolerant parser) elsewhere.
    form = calibration.tool_form if calibration is not None else "json"
    return ConstrainedTools(provider, Bars.of(calibration), form), "emulated"
