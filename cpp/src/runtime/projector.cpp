// One parallel section per input: quantize once (two levels), then the threads take runs
// of 16-row groups of the products in turn.
#include "kvgen/runtime/projector.h"

#include <algorithm>
#include <utility>

#include "kvgen/errors.h"
#include "kvgen/quant/matmul.h"

namespace kvgen {
namespace {

// At most this many 16-row groups per item of work (64 output rows: large enough to
// amortize the hand-out), and at least kItemsPerThread items per thread where the
// products have that many groups, so that the work splits evenly whatever the thread
// count (a thread that takes its last item late idles the others at most one small item).
// With many activation rows (a prompt chunk) an item is long, so the threads take smaller
// ones: at least kManyRowItemsPerThread each (SmolLM2's o and down products, 36 groups,
// were 9 items: 5 and 4 on 2 threads).
constexpr int64_t kMaxChunkUnits = 4;
constexpr int64_t kItemsPerThread = 4;
constexpr int64_t kManyRows = 16;
constexpr int64_t kManyRowItemsPerThread = 16;

int64_t chunk_units(std::span<const Product> products, int threads, int64_t rows) {
  int64_t units = 0;
  for (const Product& p : products) units += p.w->units();
  const int64_t per_thread = rows >= kManyRows ? kManyRowItemsPerThread : kItemsPerThread;
  return std::clamp<int64_t>(units / (int64_t{threads} * per_thread), 1, kMaxChunkUnits);
}

int64_t chunks_of(const Product& p, int64_t chunk) { return (p.w->units() + chunk - 1) / chunk; }

// Blocks of the input one item of the quantization quantizes (at least), and items per
// thread (at most): enough to split one 576-wide row, few enough that a hand-out is cheap.
// The SIMD quantizer does a block in 8-20 nanoseconds, less than a hand-out costs: it
// splits only inputs of several rows, in items of a microsecond or more (at 128 blocks an
// 8-row decode step quantized its 576-wide inputs, 144 blocks, on the caller alone while
// the other threads waited: 3% of the step's CPU samples).
constexpr int64_t kMinQuantBlocks = 4;
constexpr int64_t kMinVectorQuantBlocks = 32;
constexpr int64_t kQuantItemsPerThread = 4;

// The buffer `inputs` keeps for inputs of width K, made anew (allocated) only where it has
// room for fewer than `rows` rows.
template <class Buffer>
Buffer& input_buffer(std::map<int64_t, Buffer>& inputs, int64_t K, int64_t rows) {
  auto it = inputs.find(K);
  if (it == inputs.end() || it->second.max_rows() < rows) it = inputs.insert_or_assign(K, Buffer(rows, K)).first;
  return it->second;
}

// What product i of a list reads: the float rows, and the same rows quantized to int8 or
// rounded to bf16 where its weights read those (else null).
struct ProductInput {
  const float* x;
  const quant::QuantizedActivations* xq;
  const quant::Bf16Activations* xb;
};

// Item `item` of a product list cut into runs of `chunk` 16-row groups, product after
// product: units [u0, u1) of product i of `products`, computed from input(i) (a
// ProductInput) over `rows` activation rows. halves: the (2 rows, out) scratch of
// every two-level product whose levels are added here rather than in the kernel.
template <class Input>
void run_product_item(int64_t item, std::span<const Product> products, int64_t chunk, int64_t rows, int64_t ldx,
                      Activations activations, bool in_kernel, float* halves, Input&& input) {
  const bool two_level = activations == Activations::Int8TwoLevel;
  for (size_t i = 0; i < products.size(); ++i) {
    const Product& p = products[i];
    const bool int8 = p.w->reads_int8(activations);
    const bool in_halves = two_level && !in_kernel && int8;
    if (item >= chunks_of(p, chunk)) {
      item -= chunks_of(p, chunk);
      if (in_halves) halves += 2 * rows * p.w->out();
      continue;
    }
    const auto [x, xq, xb] = input(i);
    const int64_t u0 = item * chunk, u1 = std::min(p.w->units(), u0 + chunk);
    const int64_t n0 = 16 * u0, n1 = std::min(p.w->out(), 16 * u1);
    if (p.w->reads_bf16(activations)) {
      p.w->multiply_bf16(p.y, p.ldy, *xb, u0, u1);
    } else if (in_kernel && int8) {
      if (!p.w->multiply_int8x2(p.y, p.ldy, *xq, u0, u1))
        throw ValueError("no two-level kernel for this weight type");  // has_int8x2_kernels covers every type
    } else if (in_halves) {  // y = the product of the first level + the product of the residual
      const int64_t N = p.w->out();
      p.w->multiply(halves, N, x, ldx, xq, rows, u0, u1, activations);
      for (int64_t m = 0; m < rows; ++m) {
        const float* first = halves + m * N;
        const float* second = halves + (rows + m) * N;
        float* y = p.y + m * p.ldy;
        for (int64_t n = n0; n < n1; ++n) y[n] = first[n] + second[n];
      }
    } else {
      p.w->multiply(p.y, p.ldy, x, ldx, xq, rows, u0, u1, activations);
    }
    if (p.bias)
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t n = n0; n < n1; ++n) p.y[m * p.ldy + n] += p.bias[n];
    return;
  }
}

}  // namespace

void Projector::quantize(quant::QuantizedActivations& xq, const float* x, int64_t rows, int64_t ldx,
                         bool two_level) {
  const int64_t blocks = xq.blocks(rows);
  const int64_t min_blocks = xq.vectorized() ? kMinVectorQuantBlocks : kMinQuantBlocks;
  const int64_t items = std::min(blocks / min_blocks, int64_t{threads()} * kQuantItemsPerThread);
  // items' first blocks at multiples of what the quantizer does at once
  const int64_t together = xq.blocks_at_once(), units = (blocks + together - 1) / together;
  const auto first_block = [&](int64_t item) { return std::min(blocks, units * item / items * together); };
  if (!pool_ || threads() == 1 || items < 2) {
    if (two_level)
      xq.quantize_two_level(x, rows, ldx);
    else
      xq.quantize(x, rows, ldx);
    return;
  }
  // one input's blocks split among the threads (serial, this was a sixth of a decode step)
  xq.begin_parts(rows, ldx, two_level);
  pool_->for_each(items, [&](int64_t item, int) {
    xq.quantize_blocks(x, rows, ldx, two_level, first_block(item), first_block(item + 1));
  }, "quantize", xq.cols());
}

void Projector::project(const float* x, int64_t rows, int64_t ldx, std::span<const Product> products) {
  if (rows == 0 || products.size() == 0) return;
  const int64_t K = products.begin()->w->in();
  const quant::QuantizedActivations* xq = nullptr;
  const Activations activations = activations_;
  const bool two_level = activations == Activations::Int8TwoLevel;
  // AVX-512 adds the levels inside its kernels; elsewhere the two-level products write both
  // levels' (2 rows, out) outputs, added after
  const bool in_kernel = two_level && quant::has_int8x2_kernels(quant::active_cpu_path());
  int64_t halves_floats = 0;
  const quant::Bf16Activations* xb = nullptr;
  for (const Product& p : products) {
    if (p.w->in() != K) throw ValueError("products of one input must share its width");
    if (p.w->reads_bf16(activations) && !xb) {
      quant::Bf16Activations& held = input_buffer(bf16_inputs_, K, rows);
      held.convert(x, rows, ldx);
      xb = &held;
    }
    if (!p.w->reads_int8(activations)) continue;
    if (two_level && !in_kernel) halves_floats += 2 * rows * p.w->out();
    if (xq) continue;
    quant::QuantizedActivations& held = input_buffer(int8_inputs_, K, two_level ? 2 * rows : rows);
    quantize(held, x, rows, ldx, two_level);
    xq = &held;
  }
  if (static_cast<int64_t>(halves_.size()) < halves_floats) halves_.resize(halves_floats);
  // Items of work: runs of `chunk` 16-row groups of one product, product after product.
  const int64_t chunk = chunk_units(products, threads(), rows);
  int64_t items = 0;
  for (const Product& p : products) items += chunks_of(p, chunk);
  const auto run_item = [&](int64_t item, int) {
    run_product_item(item, products, chunk, rows, ldx, activations, in_kernel, halves_.data(),
                     [&](size_t) { return ProductInput{x, xq, xb}; });
  };
  if (pool_)
    pool_->for_each(items, run_item, "project", K);
  else
    for (int64_t i = 0; i < items; ++i) run_item(i, 0);
}

void Projector::project_each(const float* x, int64_t ldx, std::span<const Product> products) {
  const int64_t count = static_cast<int64_t>(products.size());
  if (count == 0) return;
  const int64_t K = products.begin()->w->in();
  const Activations activations = activations_;
  const bool two_level = activations == Activations::Int8TwoLevel;
  const bool in_kernel = two_level && quant::has_int8x2_kernels(quant::active_cpu_path());
  std::vector<quant::QuantizedActivations>& inputs = each_inputs_[K];  // (2 or 1 rows, K) each
  int64_t halves_floats = 0;
  std::vector<quant::Bf16Activations>& bf16_rows = each_bf16_inputs_[K];  // (1, K) each, where read
  for (int64_t i = 0; i < count; ++i) {
    const Product& p = products[i];
    if (p.w->in() != K) throw ValueError("products of one width of input must share it");
    if (p.w->reads_bf16(activations)) {
      while (static_cast<int64_t>(bf16_rows.size()) <= i) bf16_rows.emplace_back(1, K);
      bf16_rows[i].convert(x + i * ldx, 1, ldx);
    }
    if (!p.w->reads_int8(activations)) continue;
    if (two_level && !in_kernel) halves_floats += 2 * p.w->out();
    while (static_cast<int64_t>(inputs.size()) <= i) inputs.emplace_back(2, K);
    if (two_level)
      inputs[i].quantize_two_level(x + i * ldx, 1, ldx);
    else
      inputs[i].quantize(x + i * ldx, 1, ldx);
  }
  if (static_cast<int64_t>(halves_.size()) < halves_floats) halves_.resize(halves_floats);
  const int64_t chunk = chunk_units(products, threads(), 1);
  int64_t items = 0;
  for (const Product& p : products) items += chunks_of(p, chunk);
  const auto run_item = [&](int64_t item, int) {  // product i reads row i of x and its own quantized input
    run_product_item(item, products, chunk, 1, ldx, activations, in_kernel, halves_.data(), [&](size_t i) {
      const Product& p = products[i];
      return ProductInput{x + i * ldx, p.w->reads_int8(activations) ? &inputs[i] : nullptr,
                          p.w->reads_bf16(activations) ? &bf16_rows[i] : nullptr};
    });
  };
  if (pool_)
    pool_->for_each(items, run_item);
  else
    for (int64_t i = 0; i < items; ++i) run_item(i, 0);
}

}  // namespace kvgen
