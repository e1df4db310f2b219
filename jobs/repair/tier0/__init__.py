"""Tier 0 of the repair loop: classical program repair without an LLM (templates, mutations,
symbol tables, fault localization). Pure: everything is computed from the text handed in."""
