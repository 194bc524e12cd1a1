"""The AI gateway: an OpenAI-compatible endpoint built as a stack of stages from the spec.

``stages`` holds the stages and ``app`` stacks them once; each stage's engine has
its own module (``auth``, ``ratelimit``, ``quota``, ``exact_cache``,
``semantic_cache``, ``routing``, ``admission``); ``batch_api`` serves the Files
and Batch APIs over ``serving.files``; ``runtime`` builds the process from its
environment (``tokenplane.runtime_env``).

It may import the core, ``serving``'s shared modules, ``serving.files``,
``serving.events`` and, to run the model gateway in process, ``serving.modelgw``.
"""
