"""How the model gateway speaks to each kind of upstream, behind one small ``Provider`` protocol.

One module per kind of upstream (vLLM pools, OpenAI, Anthropic; ``base`` holds the protocol). They may import the
core's spec and ``serving``'s shared modules; the model gateway imports them, never the other way round.
"""
