"""Turn summaries: generators, prompts, capability, surfaces."""
