"""The pure repair core: budgeted retrieve -> propose -> execute -> gate loop.

The loop imports nothing from dramatiq or the bot package and reads no environment, network or
clock directly; effects arrive through the ports in :mod:`jobs.repair.ports` and the LLM port
(:mod:`jobs.repair.llm`), whose Anthropic adapter lives outside the core (:mod:`jobs.llm_anthropic`).
"""
