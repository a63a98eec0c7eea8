"""The app's connected model as the local API answers with it: the track, calibration and
context the chat uses, over a tracer of the API's own for each request, so that its
requests show in the inspector and never mix into a chat turn's trace."""

from __future__ import annotations

from desktop.api.server import Answering, Backend
from desktop.core.session import Session
from desktop.core.tracing import TracingProvider
from desktop.core.tracks.choice import on_track
from desktop.core.tracks.fitting import FittedHistory


def session_backend(session: Session) -> Backend:
    def answering() -> Answering | None:
        raw = session.backend.raw
        if raw is None or not session.connection.ok:
            return None
        session.warm_up.cancel()  # the request would wait behind it in the server's slot
        tracer = TracingProvider(raw)
        active, track = on_track(tracer, session.settings.track, session.calibration)
        trace = tracer.start_turn(track)
        return Answering(FittedHistory(tracer.observe(active), session.context_size), trace)

    return Backend(answering, lambda: session.connection.model or "loomchat")
