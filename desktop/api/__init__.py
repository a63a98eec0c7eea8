"""Loomchat as a server: an OpenAI-compatible API over the session's connected model."""
