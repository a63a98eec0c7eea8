"""The app's failures, under one root. Each says what happened in words a person can act
on; none is a crash: the window shows it and goes on, the CLI prints it and exits.

LoomchatError
├── UsageError          what was asked cannot be done as asked (CLI exit 2): a tools file
│   │                   that is not a list of functions, an unknown tool name
│   ├── McpConfigError  the MCP servers file is missing or malformed
│   ├── McpCatalogueError  the MCP catalogue cannot be read, or an install not made
│   └── TransportError  a connection setting that cannot be used: a CA file, a header
├── ProviderError       a backend failed: not running, refused, broke off its answer
├── RuntimeSetupError   the built-in runtime cannot start: no llama-server, no model
├── DataFolderError     the data folder cannot be used (read-only, damaged, full)
├── DamagedFile         a data file that cannot be used: not JSON, too large, not a file
├── SettingsError       the settings file cannot be read (the defaults are used)
├── HubError            Hugging Face cannot be reached, or has no such model
├── DownloadError       a download did not finish: cut off, damaged (deleted), no space
├── _NotTheListedFile   (in a download's child) the server sends more than the Hub lists
├── LibraryError        a model file cannot be deleted or imported
├── GgufError           a model file whose header is not GGUF, or cannot be true
├── CatalogueError      the curated model catalogue cannot be read
├── PresetError         a preset file cannot be read, or a preset name is taken
├── ServerError         a saved server that is not saved, or a name that cannot be one
├── AttachmentError     a file cannot be attached: too large, binary, damaged
├── DocumentsError      the document index cannot be used, or has no such collection
├── EmbeddingError      an embedding model cannot be had, or answered what is not vectors
├── UnreadablePdf       a PDF whose text cannot be had: password-protected or damaged
└── ToolError           a tool failed; its message becomes the result the model reads
    ├── ImageError        an image that cannot be read or is too large
    ├── WorkspaceError    a path outside the workspace, or a file it cannot read
    ├── CalculationError  an expression the calculator refuses
    ├── McpToolError      an MCP server ran the tool and it failed
    ├── PageRefused       a web page fetch_url will not fetch: a private address, too big
    └── WorkerCrashed     the worker process running a tool died

Errors of a value (UsageError, DamagedFile, GgufError, UnreadablePdf, ImageError,
WorkspaceError, CalculationError) are also ValueErrors, and the tool failures of a process also
RuntimeErrors, as before the root.
"""

from __future__ import annotations


class LoomchatError(Exception):
    """A failure the app explains to the person using it."""


class UsageError(LoomchatError, ValueError):
    """What was asked cannot be done as asked: the CLI exits 2."""


class ToolError(LoomchatError):
    """A tool failed; its message is the result the model reads."""
