"""Generation: the step generator over logits (``step``), constrained decoding's masks
(``constraints``), the engine that runs requests through a built-in model with continuous
batching (``engine``), the model generator that turns text into requests and back
(``model_generator``), results (``results``) and incremental detokenizing (``detokenize``)."""
