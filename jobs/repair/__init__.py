"""The pure repair core: budgeted retrieve -> propose -> execute -> gate loop.

The loop imports nothing from dramatiq or the bot package and reads no environment, network or
clock directly; effects arrive through the ports in :mod:`jobs.repair.ports`. The Anthropic adapter
(:mod:`jobs.repair.llm`) imports the SDK lazily, only when it is constructed.
"""
