"""Generation: the token selector over logits (``step``), constrained decoding's masks
(``constraints``), the engine that runs requests through a built-in model with continuous
batching (``engine``: its requests ``request``, the pass it plans ``pass_plan``, the prefix cache
``prefix_cache``, speculation ``speculation`` / ``speculative_rows`` / ``drafters``, prompt
scoring ``prompt_scores``, step updates ``step_updates``, sizes ``engine_size``), the model
generator that turns text into requests and back (``model_generator``, its kept engine
``engine_pool``, ``generate_batch``'s run ``batch_run``), results (``results``) and incremental
detokenizing (``detokenize``)."""
