// The shared decoder forward loop: request checks, batch layout, cache bookkeeping,
// attention against the cache, and the LM head.
#include "kvgen/models/decoder.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/runtime/attention.h"
#include "kvgen/ops/layer_ops.h"

namespace kvgen {

namespace {

// Heads at most this wide attend long chunks token by token. Wider ones (Gemma 3's 256) in query
// blocks: the token loops' accumulators of a group's heads outgrow the registers, and a
// 2,000-token prefill of Gemma 3 270M ran 0.91x the query blocks' speed token by token.
constexpr int64_t kTokenByTokenHeadDim = 128;

// Whether a layer (the one whose keys and values it reads) attends long chunks in
// kPrefillChunk-aligned query blocks with matrix products rather than token by token: a sliding
// window's ring (fewer slots than the context), where a long chunk's keys and values would
// overwrite positions its first tokens see (attend cuts those chunks into blocks that fit), and
// heads wider than kTokenByTokenHeadDim.
bool query_blocks(const KVCache& cache, int64_t layer) {
  return cache.capacity(layer) < cache.max_context() || cache.head_dim(layer) > kTokenByTokenHeadDim;
}

// Whether a chunk is attended token by token (attend_tokens) in a layer: every chunk, unless the
// layer attends in query blocks; then only chunks of at most kTokenByTokenAttention tokens
// (decode, verification, a prompt's short last piece) that are not a prompt's rest
// (RowTokens::in_blocks).
bool short_chunk(const RowTokens& c) { return c.count <= kTokenByTokenAttention && !c.in_blocks; }
bool by_tokens(const RowTokens& c, bool in_query_blocks) { return !in_query_blocks || short_chunk(c); }

// f(ci, o0, o1) for each piece of the chunks that attend token by token (attended(chunk)): runs of
// at most kTokenByTokenAttention tokens of chunk ci, tokens [o0, o1) of the batch.
template <class Attended, class F>
void for_each_piece(const std::vector<RowTokens>& chunks, Attended&& attended, F&& f) {
  for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci)
    if (attended(chunks[ci]))
      for (int64_t i0 = 0; i0 < chunks[ci].count; i0 += kTokenByTokenAttention)
        f(ci, static_cast<int64_t>(o) + i0,
          static_cast<int64_t>(o) + std::min(chunks[ci].count, i0 + kTokenByTokenAttention));
}

std::atomic<int64_t> parts_budget{int64_t{1} << 22};

}  // namespace

int64_t attention_parts_budget() { return parts_budget.load(std::memory_order_relaxed); }

void set_attention_parts_budget(int64_t floats) {
  if (floats < 0) throw ValueError("attention parts budget: " + std::to_string(floats) + " floats is negative");
  parts_budget.store(floats, std::memory_order_relaxed);
}

void DecoderModel::grow_rows(xt::xtensor<float, 2>& buf, int64_t rows, int64_t width) {
  if (static_cast<int64_t>(buf.shape(0)) >= rows && static_cast<int64_t>(buf.shape(1)) == width) return;
  buf = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(rows), static_cast<size_t>(width)});
}

void DecoderModel::attend(float* out, const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                          int64_t ldv, int64_t layer, const ForwardPass& batch, KVCache& cache, float scale, float softcap,
                          const float* sinks) {
  const int64_t H = config_.heads, KV = config_.kv_heads_of(layer), hd = config_.head_dim_of(layer);
  const std::vector<RowTokens>& chunks = *batch.chunks;
  const AttentionOptions options{.scale = scale, .softcap = softcap, .window = config_.window(layer), .sinks = sinks};
  // a layer that reads another's keys and values (ModelConfig::kv_source) writes none and
  // attends over that layer's, which an earlier block of this forward has written
  const int64_t source = config_.kv_source(layer);
  const bool own_kv = source == layer;
  layer = source;
  const int64_t slots = cache.capacity(layer);
  // Tokens of each chunk written and attended at once: all of them, unless the layer
  // keeps a ring shorter than the context; then as many as the ring holds beyond the
  // window, so that writing a block overwrites only positions that no token of it sees.
  const bool ring = slots < cache.max_context(), in_query_blocks = query_blocks(cache, layer);
  const int64_t block = ring ? slots - options.window + 1 : batch.max_count;
  float* scores = scratch_.scores.data();  // (threads, batch.max_scores), reserved by forward
  for (int64_t b0 = 0; b0 < batch.max_count; b0 += block) {
    for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci) {
      const RowTokens& c = chunks[ci];
      for (int64_t i = b0; own_kv && i < std::min(c.count, b0 + block); ++i)  // keys and values into the cache
        cache.store(layer, c.row, (batch.starts[ci] + i) % slots, k + (o + i) * ldk, v + (o + i) * ldv);
    }
    // the chunks attended token by token (by_tokens) in blocks of positions; in a ring they are
    // short and whole in the first block (a ring keeps 32 beyond its window)
    if (b0 == 0 && batch.any_by_tokens) attend_tokens(out, q, ldq, layer, batch, cache, options, in_query_blocks);
    if (!in_query_blocks || !batch.any_in_blocks) continue;
    // every longer chunk's attention for this block, in kPrefillChunk-aligned query blocks (model.h)
    std::vector<QueryBlock>& blocks = scratch_.query_blocks;
    blocks.clear();
    for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci) {
      if (by_tokens(chunks[ci], in_query_blocks)) continue;
      const int64_t end = std::min(chunks[ci].count, b0 + block);
      for (int64_t i0 = b0, i1; i0 < end; i0 = i1) {
        i1 = std::min(end, i0 + kPrefillChunk - (batch.starts[ci] + i0) % kPrefillChunk);
        blocks.push_back({ci, static_cast<int64_t>(o), i0, i1});
      }
    }
    // a query head of one query block per item of work (each thread its own scores)
    const int64_t n_blocks = static_cast<int64_t>(blocks.size());
    projector_.pool().for_each(H * n_blocks, [&](int64_t item, int t) {
      const int64_t head = item / n_blocks;
      const QueryBlock& qb = blocks[item % n_blocks];
      float* kv_here = cache.type() != KVType::Float32 ? scratch_.kv.data() + t * 2 * batch.end * hd : nullptr;
      const int64_t start = batch.starts[qb.ci] + qb.i0, count = qb.i1 - qb.i0;
      // a prompt's rest whose first block starts past its aligned start: the whole block, as a fresh
      // prefill computes it (the products' rounding depends on their row count), the rows of the
      // cached positions before it with zero queries, their outputs dropped
      const int64_t pad = chunks[qb.ci].in_blocks && qb.i0 == 0 ? start % kPrefillChunk : 0;
      if (pad == 0) {
        causal_attention(out + (qb.o + qb.i0) * H * hd, H * hd, q + (qb.o + qb.i0) * ldq, ldq, cache, layer,
                         chunks[qb.ci].row, start, count, H, KV, hd, options, head, scores + t * batch.max_scores,
                         kv_here);
        return;
      }
      const int64_t w = H * hd;
      float* qp = scratch_.padded.data() + t * 2 * kPrefillChunk * w;  // (kPrefillChunk, w) queries
      float* op = qp + kPrefillChunk * w;                               // (kPrefillChunk, w) outputs
      for (int64_t i = 0; i < pad; ++i) std::fill_n(qp + i * w + head * hd, hd, 0.0f);
      for (int64_t i = 0; i < count; ++i)
        std::copy_n(q + (qb.o + qb.i0 + i) * ldq + head * hd, hd, qp + (pad + i) * w + head * hd);
      causal_attention(op, w, qp, w, cache, layer, chunks[qb.ci].row, start - pad, pad + count, H, KV, hd, options,
                       head, scores + t * batch.max_scores, kv_here);
      for (int64_t i = 0; i < count; ++i)
        std::copy_n(op + (pad + i) * w + head * hd, hd, out + (qb.o + qb.i0 + i) * w + head * hd);
    }, "attention");
  }
}

void DecoderModel::attend_tokens(float* out, const float* q, int64_t ldq, int64_t layer, const ForwardPass& batch,
                                 KVCache& cache, const AttentionOptions& options, bool in_query_blocks) {
  const int64_t H = config_.heads, KV = cache.kv_heads(layer), hd = cache.head_dim(layer), group = H / KV;
  const std::vector<RowTokens>& chunks = *batch.chunks;
  const int64_t part = block_part_floats(group, hd), scratch = block_scratch_floats(group, hd);
  // pieces: the chunks attended token by token, cut into runs of at most kTokenByTokenAttention
  // tokens (batch order); a round takes the pieces whose parts fit in scratch_.parts (forward
  // sized it to at least the largest piece's), so that a long prefill's parts need not all be
  // held at once
  std::vector<Piece>& pieces = scratch_.pieces;
  pieces.clear();
  for_each_piece(chunks, [&](const RowTokens& c) { return by_tokens(c, in_query_blocks); },
                 [&](size_t ci, int64_t o0, int64_t o1) { pieces.push_back({ci, o0, o1, 0}); });
  const auto parts_of = [&](int64_t i) { return KV * key_blocks(batch.positions[i], options.window); };
  const int64_t capacity = static_cast<int64_t>(scratch_.parts.size()) / part;  // parts a round may hold
  float* parts = scratch_.parts.data();
  // parts: token after token (the round's, in batch order), kv head after kv head, block after
  // block, as merge_blocks reads them
  std::vector<int64_t>& first = scratch_.first_item;  // (round's tokens + 1) each token's first part
  // items: piece after piece, kv head after kv head, block after block; an item runs its block for
  // every token of the piece that sees it, token after token, so that a verify pass's tokens read
  // each block of keys and values while it is in cache rather than the whole row each (at 4,000
  // positions the row is far larger than L2). A token's block is the same computation as when the
  // token is alone in its pass, so its part, and the pass's output, are unchanged bit for bit.
  std::vector<int64_t>& piece_item = scratch_.piece_item;  // (round's pieces + 1) each piece's first item
  for (size_t p0 = 0, p1; p0 < pieces.size(); p0 = p1) {
    // the round's tokens, piece after piece: token k's parts start at first[k] (first.back(): the
    // round's parts so far)
    first.assign(1, 0);
    piece_item.assign(1, 0);
    for (p1 = p0; p1 < pieces.size(); ++p1) {
      Piece& piece = pieces[p1];
      int64_t here = 0;
      for (int64_t i = piece.o0; i < piece.o1; ++i) here += parts_of(i);
      if (p1 > p0 && first.back() + here > capacity) break;
      piece.first = static_cast<int64_t>(first.size()) - 1;
      for (int64_t i = piece.o0; i < piece.o1; ++i) first.push_back(first.back() + parts_of(i));
      piece_item.push_back(piece_item.back() + parts_of(piece.o1 - 1));  // its last token sees the most blocks
    }
    projector_.pool().for_each(piece_item.back(), [&](int64_t item, int t) {
      const int64_t pi = std::upper_bound(piece_item.begin(), piece_item.end(), item) - piece_item.begin() - 1;
      const Piece& piece = pieces[p0 + pi];
      const int64_t blocks = (piece_item[pi + 1] - piece_item[pi]) / KV;
      const int64_t kv = (item - piece_item[pi]) / blocks, block = (item - piece_item[pi]) % blocks;
      float* part_of[kTokenByTokenAttention];  // the piece's tokens that see the block
      const float* q_of[kTokenByTokenAttention];
      int64_t t_of[kTokenByTokenAttention], count = 0;
      for (int64_t i = piece.o0, k = piece.first; i < piece.o1; ++i, ++k) {
        const int64_t own = (first[k + 1] - first[k]) / KV;  // the token's blocks
        if (block >= own) continue;
        part_of[count] = parts + (first[k] + kv * own + block) * part;
        q_of[count] = q + i * ldq;
        t_of[count++] = batch.positions[i];
      }
      attention_block_tokens(part_of, q_of, t_of, count, cache, layer, chunks[piece.ci].row, kv, block, group,
                             options, scratch_.attention.data() + t * scratch);
    });
    for (size_t p = p0; p < p1; ++p)
      for (int64_t i = pieces[p].o0, k = pieces[p].first; i < pieces[p].o1; ++i, ++k)
        merge_blocks(out + i * H * hd, parts + first[k] * part, KV, (first[k + 1] - first[k]) / KV, group, hd,
                     options.sinks);
  }
}

void DecoderModel::softcap_logits(float* logits, int64_t rows, int64_t ld) const {
  const float cap = final_logit_softcap_, inv = 1.0f / cap;
  if (cap <= 0.0f) return;
  const int64_t V = config_.vocab_size;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < V; ++i) logits[r * ld + i] = cap * std::tanh(logits[r * ld + i] * inv);
}

void DecoderModel::forward(const std::vector<RowTokens>& chunks, KVCache& cache, float* logits, bool all_positions) {
  const int64_t C = config_.hidden, V = config_.vocab_size;
  // ---- checks, before any work ----
  ForwardPass& b = batch_;
  b.chunks = &chunks;
  b.n = 0;
  b.max_scores = 0;
  b.end = 0;
  b.max_count = 0;
  b.min_count = INT64_MAX;
  b.any_by_tokens = b.any_in_blocks = false;
  b.starts.resize(chunks.size());
  // the kinds of attention layers: those that attend every chunk token by token, and those that
  // attend long chunks in query blocks (by_tokens)
  bool by_token_layers = false, block_layers = false;
  for (int64_t l = 0; l < config_.layers; ++l) (query_blocks(cache, config_.kv_source(l)) ? block_layers : by_token_layers) = true;
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    const RowTokens& c = chunks[ci];
    if (c.row < 0 || c.row >= cache.rows())
      throw ValueError("cache row " + std::to_string(c.row) + " is outside [0, " + std::to_string(cache.rows()) + ")");
    const int64_t start = cache.length(c.row);
    const int64_t limit = std::min(cache.max_context(), config_.context_length);
    if (start + c.count > limit)
      throw ValueError("context overflow: row " + std::to_string(c.row) + " would reach position " +
                       std::to_string(start + c.count) + ", beyond the " + std::to_string(limit) +
                       " positions available");
    if (c.hidden != nullptr && ((c.logits != nullptr && !c.logits_too) || all_positions))
      throw ValueError("the chunk of row " + std::to_string(c.row) +
                       " asks for hidden states and logits at once; a chunk gets one or the other");
    if ((c.input_hidden != nullptr) != reads_input_hidden())
      throw ValueError(reads_input_hidden() ? "the chunk of row " + std::to_string(c.row) +
                                                  " has no input hidden states, which this model reads"
                                            : "the chunk of row " + std::to_string(c.row) +
                                                  " carries input hidden states, which this model does not read");
    for (int64_t i = 0; i < c.count; ++i)
      if (c.tokens[i] < 0 || c.tokens[i] >= V)
        throw ValueError("token id " + std::to_string(c.tokens[i]) + " is outside the vocabulary [0, " +
                         std::to_string(V) + ")");
    if (c.checkpoints >= 0) {
      if (!token_checkpoints())
        throw ValueError("the chunk of row " + std::to_string(c.row) +
                         " asks for state checkpoints, which this model does not write");
      if (cache.state() == nullptr || c.checkpoints + c.count > cache.state()->snapshots())
        throw ValueError("the chunk of row " + std::to_string(c.row) + " asks for state checkpoints [" +
                         std::to_string(c.checkpoints) + ", " + std::to_string(c.checkpoints + c.count) +
                         ") beyond the cache's " +
                         std::to_string(cache.state() ? cache.state()->snapshots() : 0) + " snapshot slots");
    }
    b.starts[ci] = start;
    b.n += c.count;
    b.end = std::max(b.end, start + c.count);
    b.max_count = std::max(b.max_count, c.count);
    b.min_count = std::min(b.min_count, c.count);
    if (by_token_layers || short_chunk(c)) b.any_by_tokens = true;
    if (block_layers && !short_chunk(c)) {
      b.any_in_blocks = true;
      // a prompt's rest: its first query block padded to its aligned start
      const int64_t rows = c.count + (c.in_blocks ? start % kPrefillChunk : 0);
      b.max_scores = std::max(b.max_scores, rows * (start + c.count));
    }
  }
  b.positions.resize(b.n);
  b.tokens.resize(b.n);
  for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci)
    for (int64_t i = 0; i < chunks[ci].count; ++i) {
      b.positions[o + i] = b.starts[ci] + i;
      b.tokens[o + i] = chunks[ci].tokens[i];
    }
  const int64_t n = b.n;
  projector_.use(compute_pool());
  const ForwardScope profiled_forward;
  grow_rows(scratch_.x, n, C);
  grow_rows(scratch_.normed, n, C);
  const int64_t threads = projector_.threads();
  const int64_t all_scores = limits::checked_mul(b.max_scores, threads, "attention scores");
  const auto grow = [](xt::xtensor<float, 1>& buf, int64_t floats) {
    if (static_cast<int64_t>(buf.size()) < floats) buf = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(floats)});
  };
  grow(scratch_.scores, all_scores);
  const int64_t max_hd = config_.max_head_dim();
  if (b.any_by_tokens) {  // blocks of positions (attend_tokens)
    int64_t per_block = 0, per_thread = 0;  // the largest over the layers' shapes
    for (int64_t l = 0; l < config_.layers; ++l) {
      const int64_t kvh = config_.kv_heads_of(l), group = config_.heads / kvh, hd = config_.head_dim_of(l);
      per_block = std::max(per_block, kvh * block_part_floats(group, hd));
      per_thread = std::max(per_thread, block_scratch_floats(group, hd));
    }
    // at most (every layer's window full): the blocks of all the tokens attended token by token,
    // and of the largest piece (attend_tokens' rounds hold at least one)
    int64_t blocks = 0, piece_blocks = 0, pieces = 0;
    for_each_piece(chunks, [&](const RowTokens& c) { return by_token_layers || short_chunk(c); },
                   [&](size_t, int64_t o0, int64_t o1) {
                     int64_t here = 0;
                     for (int64_t i = o0; i < o1; ++i) here += key_blocks(b.positions[i], 0);
                     blocks += here;
                     piece_blocks = std::max(piece_blocks, here);
                     ++pieces;
                   });
    const int64_t held = std::max(piece_blocks, std::min(blocks, attention_parts_budget() / per_block));
    grow(scratch_.parts, limits::checked_mul(held, per_block, "attention parts"));
    grow(scratch_.attention, threads * per_thread);
    scratch_.pieces.reserve(pieces);
    scratch_.piece_item.reserve(pieces + 1);
    scratch_.first_item.reserve(n + 1);
  }
  if (b.any_in_blocks && cache.type() != KVType::Float32)  // a prefill's spans of keys and values as floats
    grow(scratch_.kv, limits::checked_mul(threads, 2 * b.end * max_hd, "attention keys and values"));
  for (const RowTokens& c : chunks)
    if (c.in_blocks) {  // a prompt's rest: padded query blocks
      grow(scratch_.padded, threads * 2 * kPrefillChunk * config_.heads * max_hd);
      break;
    }
  reserve_builders(b);
  reserve(b);

  // ---- embeddings and blocks: x (n, C) ----
  float* x = scratch_.x.data();
  embed(x, b);
  for (int64_t l = 0; l < config_.layers; ++l) block(l, x, b, cache);
  for (size_t ci = 0; ci < chunks.size(); ++ci) cache.set_length(chunks[ci].row, b.starts[ci] + chunks[ci].count);

  // ---- final norm; the hidden states of the chunks that ask for them, the LM head for the rest ----
  float* h = scratch_.normed.data();
  if (all_positions) {
    final_norm(h, x, n);
    projector_.project(h, n, C, {{&lm_head_, lm_head_bias_, logits, V}});
    softcap_logits(logits, n, V);
    return;
  }
  // rows of h: the last token of each chunk, every token of a chunk that asks for its logits or
  // its hidden states
  const auto rows_of = [](const RowTokens& c) { return c.logits != nullptr || c.hidden != nullptr ? c.count : 1; };
  int64_t m = 0;
  bool all_of_some = false, hidden_of_some = false;
  for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci) {
    const int64_t take = rows_of(chunks[ci]);
    all_of_some = all_of_some || chunks[ci].logits != nullptr;
    hidden_of_some = hidden_of_some || chunks[ci].hidden != nullptr;
    std::memcpy(h + m * C, x + (o + chunks[ci].count - take) * C, sizeof(float) * C * take);
    m += take;
  }
  final_norm(h, h, m);
  if (hidden_of_some) {  // the hidden states out; the rows that get logits move up, in order, for the LM head
    int64_t kept = 0;
    for (size_t ci = 0, r = 0; ci < chunks.size(); ++ci) {
      const RowTokens& c = chunks[ci];
      const int64_t take = rows_of(c);
      // the rows of this chunk the LM head reads: all of them, its last (a chunk with
      // hidden states and logits_too but no logits target), or none (hidden states alone)
      int64_t keep = take;
      if (c.hidden != nullptr) {
        std::memcpy(c.hidden, h + r * C, sizeof(float) * C * take);
        keep = !c.logits_too ? 0 : c.logits != nullptr ? take : 1;
      }
      if (keep > 0 && kept != static_cast<int64_t>(r + take - keep))
        std::memmove(h + kept * C, h + (r + take - keep) * C, sizeof(float) * C * keep);
      kept += keep;
      r += take;
    }
    m = kept;
    if (m == 0) return;
  }
  if (all_of_some || hidden_of_some) {  // one GEMM, then each chunk's rows of logits to where it asked
    grow_rows(scratch_.logits, m, V);
    float* tmp = scratch_.logits.data();
    projector_.project(h, m, C, {{&lm_head_, lm_head_bias_, tmp, V}});
    softcap_logits(tmp, m, V);
    for (size_t ci = 0, r = 0; ci < chunks.size(); ++ci) {
      const RowTokens& c = chunks[ci];
      if (c.hidden != nullptr && !c.logits_too) continue;
      const int64_t take = c.logits != nullptr ? c.count : 1;
      float* dst = c.logits != nullptr ? c.logits : logits + c.row * V;
      std::memcpy(dst, tmp + r * V, sizeof(float) * V * take);
      r += take;
    }
    return;
  }
  // one GEMM for every chunk's last token, then each row of logits to its cache row
  bool rows_in_order = true;
  for (int64_t ci = 0; ci < m; ++ci) rows_in_order = rows_in_order && chunks[ci].row == chunks[0].row + ci;
  if (rows_in_order) {
    projector_.project(h, m, C, {{&lm_head_, lm_head_bias_, logits + chunks[0].row * V, V}});
    softcap_logits(logits + chunks[0].row * V, m, V);
    return;
  }
  grow_rows(scratch_.logits, m, V);
  float* tmp = scratch_.logits.data();
  projector_.project(h, m, C, {{&lm_head_, lm_head_bias_, tmp, V}});
  softcap_logits(tmp, m, V);
  for (int64_t ci = 0; ci < m; ++ci) std::memcpy(logits + chunks[ci].row * V, tmp + ci * V, sizeof(float) * V);
}

const float* DecoderModel::read_vector(const TensorMap& t, const std::string& name, int64_t size) {
  count_weight(size);
  return t.get(name, {size});
}

LinearWeight DecoderModel::read_matrix(const TensorMap& t, const std::string& name, int64_t out, int64_t in) {
  LinearWeight w = t.linear(name, out, in);
  count_weight(w);
  return w;
}

DecoderModel::Linear DecoderModel::read_linear(const TensorMap& t, const std::string& name, int64_t out, int64_t in) {
  const std::string bias = name + ".bias";
  return Linear{read_matrix(t, name + ".weight", out, in), t.has(bias) ? read_vector(t, bias, out) : nullptr};
}

void DecoderModel::check_finite(const char* model, float value, const char* what) {
  if (!std::isfinite(value)) throw ValueError(std::string(model) + ": " + what + " is " + std::to_string(value));
}

void DecoderModel::extend_rotary(RotaryTable& table, const std::vector<float>& inv_freq, float factor, int64_t end) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  const int64_t have = static_cast<int64_t>(table.cos.size()) / half;
  if (end <= have) return;
  table.cos.resize(end * half);
  table.sin.resize(end * half);
  for (int64_t p = have; p < end; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * inv_freq[i];
      table.cos[p * half + i] = static_cast<float>(std::cos(static_cast<double>(angle))) * factor;
      table.sin[p * half + i] = static_cast<float>(std::sin(static_cast<double>(angle))) * factor;
    }
}

}  // namespace kvgen
