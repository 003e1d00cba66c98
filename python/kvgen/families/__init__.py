"""Model families: one module per family turns its files' facts into the core's options and
the model's capabilities (kvgen.families.capabilities), read by the engine and the server."""
