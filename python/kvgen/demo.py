"""A small demonstration: `python -m kvgen.demo`.

Runs the worked example of next-token selection: logits (10, 8, 5, 2, 1, 0.5) for the
tokens "cat", "dog", "car", "house", "tree", "book", temperature 1, top-k 3, top-p 0.9.
Top-k keeps cat, dog, car; top-p keeps cat and dog (0.875 < 0.9 <= 0.994); so
P(cat) = e^10 / (e^10 + e^8) = 0.881 and P(dog) = 0.119. kvgen processes the logits
in place, then draws 10,000 tokens with a fixed seed and shows their frequencies.
"""

from __future__ import annotations

import numpy as np

import kvgen

WORDS = ["cat", "dog", "car", "house", "tree", "book"]


def main() -> None:
    logits = np.array([[10.0, 8.0, 5.0, 2.0, 1.0, 0.5]], dtype=np.float32)
    config = kvgen.GenerationConfig(do_sample=True, temperature=1.0, top_k=3, top_p=0.9, seed=2024)
    processor = kvgen.LogitsProcessor(config)
    print(config)
    print(processor)

    processed = processor(None, logits.copy())
    probs = np.exp(processed[0] - processed[0].max())
    probs /= probs.sum()
    print("\nprocessed logits and probabilities:")
    for word, value, p in zip(WORDS, processed[0], probs):
        print(f"  {word:6s} {value:6.1f}  p = {p:.3f}")

    draws = 10_000
    batch = np.repeat(logits, draws, axis=0)  # one row per independent draw
    tokens = kvgen.sample(batch, config, sequence_ids=np.arange(draws))
    counts = np.bincount(tokens, minlength=len(WORDS))
    print(f"\n{draws} draws (seed {config.seed}):")
    for word, count in zip(WORDS, counts):
        print(f"  {word:6s} {count / draws:.3f}")

    greedy = kvgen.sample(logits, kvgen.GenerationConfig(temperature=0.0))
    print(f"\ngreedy (temperature=0) picks: {WORDS[int(greedy[0])]}")


if __name__ == "__main__":
    main()
