"""Loomchat: a desktop app for using local models with tools, offline."""

__version__ = "0.1.0"
