// Decode attention (attention_block + merge_blocks) against a direct double-precision
// softmax(scale * q k^T) v over the same cached keys and values (read back with
// KVCache::load, so a half cache's rounding is in both), for the widths with register
// kernels (64, 128, 256) and others, groups of query heads that take one or several passes
// over a block, sliding-window rings that wrap, soft-capping and attention sinks (a logit
// per query head in the denominator).
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "kvgen/runtime/attention.h"
#include "kvgen/runtime/kv_cache.h"

namespace {

using kvgen::AttentionOptions;
using kvgen::KVCache;
using kvgen::KVType;

struct Case {
  int64_t head_dim, group, kv_heads, window, t;  // the token at position t attends
  float softcap;
  KVType type;
  bool sinks = false;  // a learned logit per query head joins the softmax (AttentionOptions::sinks)
};

// The largest |attention_block's result - the direct one| over every head of the case.
double worst_difference(const Case& c) {
  const int64_t hd = c.head_dim, kv = c.kv_heads, heads = kv * c.group, context = c.t + 1;
  KVCache cache(1, 2, context, kv, hd, {c.window}, c.type);
  std::mt19937 rng(static_cast<unsigned>(hd * 131 + c.group * 17 + c.window + c.t));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> k(kv * hd), v(kv * hd), q(heads * hd);
  for (int64_t p = 0; p <= c.t; ++p) {  // row 1 (row 0 stays empty: offsets must be per row)
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    cache.store(0, 1, p % cache.capacity(0), k.data(), v.data());
  }
  for (float& x : q) x = 0.5f * normal(rng);
  std::vector<float> sinks(heads);
  for (float& x : sinks) x = 2.0f * normal(rng);
  AttentionOptions o;
  if (c.sinks) o.sinks = sinks.data();
  o.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  o.softcap = c.softcap;
  o.window = c.window;

  const int64_t blocks = kvgen::key_blocks(c.t, c.window), part = kvgen::block_part_floats(c.group, hd);
  std::vector<float> parts(kv * blocks * part), scratch(kvgen::block_scratch_floats(c.group, hd)), out(heads * hd);
  for (int64_t h = 0; h < kv; ++h)
    for (int64_t b = 0; b < blocks; ++b)
      kvgen::attention_block(parts.data() + (h * blocks + b) * part, q.data(), cache, 0, 1, c.t, h, b, c.group, o,
                             scratch.data());
  kvgen::merge_blocks(out.data(), parts.data(), kv, blocks, c.group, hd, o.sinks);

  double worst = 0.0;
  const int64_t first = kvgen::first_key(c.t, c.window), n = c.t + 1 - first;
  std::vector<float> keys(hd), values(hd);
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<double> s(n), acc(hd, 0.0);
    double top = -INFINITY, total = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      cache.load(keys.data(), values.data(), 0, 1, h / c.group, (first + j) % cache.capacity(0), 1);
      double dot = 0.0;
      for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(q[h * hd + d]) * keys[d];
      s[j] = dot * o.scale;
      if (c.softcap > 0) s[j] = c.softcap * std::tanh(s[j] / c.softcap);
      top = std::max(top, s[j]);
    }
    if (c.sinks) {  // softmax([scores, sink]) without the sink's own weight
      top = std::max(top, static_cast<double>(sinks[h]));
      total += std::exp(sinks[h] - top);
    }
    for (int64_t j = 0; j < n; ++j) {
      cache.load(keys.data(), values.data(), 0, 1, h / c.group, (first + j) % cache.capacity(0), 1);
      const double w = std::exp(s[j] - top);
      total += w;
      for (int64_t d = 0; d < hd; ++d) acc[d] += w * values[d];
    }
    for (int64_t d = 0; d < hd; ++d) worst = std::max(worst, std::abs(out[h * hd + d] - acc[d] / total));
  }
  return worst;
}

void decode_attention_equals_a_direct_softmax() {
  const KVType half = KVType::Float16, f32 = KVType::Float32;
  const std::vector<Case> cases = {
      {64, 3, 3, 0, 300, 0.0f, half},    // two blocks, the SmolLM2 shape
      {64, 7, 1, 0, 100, 0.0f, half},    // 7 heads: several passes over a block
      {64, 1, 2, 0, 40, 0.0f, half},     // one head per kv head
      {128, 4, 2, 0, 270, 0.0f, half},
      {256, 2, 1, 0, 30, 30.0f, half},   // soft-capped
      {80, 2, 1, 0, 20, 0.0f, half},     // a width without a register kernel
      {64, 3, 1, 40, 200, 0.0f, half},   // a ring of 71 slots: the keys wrap
      {128, 2, 1, 40, 90, 0.0f, half},
      {64, 3, 2, 0, 300, 0.0f, f32},
      {64, 3, 1, 40, 200, 50.0f, f32},
      {64, 3, 2, 0, 300, 0.0f, half, true},   // sinks, merged over two blocks
      {16, 2, 2, 8, 40, 0.0f, f32, true},     // sinks on a sliding layer (GPT-OSS's test shape)
      {64, 3, 1, 40, 200, 0.0f, KVType::Int8, true},
  };
  for (const Case& c : cases) {
    const double worst = worst_difference(c);
    if (!(worst < 2e-5)) {
      CHECK_NEAR(worst, 0.0, 2e-5);
      std::cerr << "  head_dim " << c.head_dim << ", group " << c.group << ", window " << c.window << ", t " << c.t
                << (c.type == half ? ", half" : c.type == f32 ? ", float32" : ", int8")
                << (c.sinks ? ", sinks" : "") << '\n';
    }
  }
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(decode_attention_equals_a_direct_softmax),
  });
}
