"""Per-model calibration of tool calling: how a model calls the tools it is offered, and
the call gate's bar and the track that serve it best.

Models differ in how sure they are when they open a call (one model's odds are 0.95 where
a call is due and 0.87 where none is; a larger one's 0.58-0.86 where a call is plainly
due), so no fixed bar suits them all. Calibration asks the model a few dozen short
questions built from the tools themselves (their examples; a request with only other tools
offered; chit-chat; a question the last result already answers), once with no bar,
reading its odds of a call on each, and picks the bar that best separates the calls that
were due and right from the answers that should have been text. Where the backend has
its own tool calling, that track answers the same questions and the better one is kept.

The run is paused (its request cancelled, the question asked again later) whenever a chat
needs the model: calibration never makes a person wait.
"""
