// Binding of kvgen::TokenSelector (the step API over external logits) and its results.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <optional>
#include <utility>

#include "arrays.h"
#include "kvgen/errors.h"
#include "kvgen/token_selector.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

template <class T>
py::array_t<T> copy_array(const T* data, int64_t n) {
  py::array_t<T> out(n);
  std::copy(data, data + n, out.mutable_data());
  return out;
}

py::object reason_object(FinishReason r) {
  return r == FinishReason::None ? py::object(py::none()) : py::object(py::str(finish_reason_name(r)));
}

// Token texts from str or bytes entries (str is encoded as UTF-8).
std::vector<std::string> token_texts(py::handle obj) {
  std::vector<std::string> out;
  for (py::handle item : py::iter(obj)) {
    if (py::isinstance<py::bytes>(item))
      out.push_back(item.cast<std::string>());
    else if (py::isinstance<py::str>(item))
      out.push_back(item.cast<std::string>());
    else
      throw TypeError("token_strings must hold str or bytes, got " +
                      std::string(py::str(py::type::of(item).attr("__name__"))));
  }
  return out;
}

// A Python int as int64; ValueError naming `where()` when it does not fit.
template <class Where>
int64_t int64_of(py::handle value, Where where) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0)
    throw ValueError(where() + ": " + std::string(py::str(value)) + " does not fit in a 64-bit integer (token ids "
                     "are 0 .. vocab_size - 1)");
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

// sequence_ids: None (empty) or one int per prompt.
std::vector<int64_t> sequence_id_list(py::handle ids) {
  std::vector<int64_t> out;
  if (ids.is_none()) return out;
  if (py::isinstance<py::str>(ids) || !py::hasattr(ids, "__iter__"))
    throw TypeError("sequence_ids must be a list of ints (one per prompt) or None");
  py::object seq = py::isinstance<py::array>(ids) ? py::object(ids.attr("tolist")()) : py::reinterpret_borrow<py::object>(ids);
  for (py::handle v : py::iter(seq)) {
    if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v))
      throw TypeError("sequence_ids must hold ints, got " + std::string(py::str(py::type::of(v).attr("__name__"))));
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow != 0)
      throw ValueError("sequence_ids[" + std::to_string(out.size()) + "] = " + std::string(py::str(v)) +
                       " does not fit in a 64-bit integer");
    out.push_back(id);
  }
  return out;
}

std::vector<std::vector<int64_t>> prompt_lists(py::handle given) {
  py::module_ np = py::module_::import("numpy");
  // owns the list an array converts to (a handle alone would dangle)
  py::object prompts = py::reinterpret_borrow<py::object>(given);
  if (py::isinstance<py::array>(prompts)) {
    py::array a = py::reinterpret_borrow<py::array>(prompts);
    const char kind = a.dtype().kind();
    if (kind != 'i' && kind != 'u')
      throw TypeError("prompts must hold integer token ids, got dtype " + std::string(py::str(a.dtype())));
    if (a.ndim() == 1) a = np.attr("expand_dims")(a, 0);
    if (a.ndim() != 2) throw ValueError("prompts as an array must be 1-D (one prompt) or 2-D [batch, length]");
    prompts = a.attr("tolist")();
  }
  std::vector<std::vector<int64_t>> out;
  for (py::handle p : py::iter(prompts)) {
    if (py::isinstance<py::int_>(p))
      throw TypeError("prompts must be a list of token-id lists (for one prompt: [[1, 2, 3]])");
    std::vector<int64_t> ids;
    py::object seq = py::isinstance<py::array>(p) ? py::object(p.attr("tolist")()) : py::reinterpret_borrow<py::object>(p);
    for (py::handle t : py::iter(seq)) {
      if (!py::isinstance<py::int_>(t)) throw TypeError("prompts must hold integer token ids");
      ids.push_back(int64_of(t, [&] { return "prompt " + std::to_string(out.size()) + ", position " +
                                             std::to_string(ids.size()); }));
    }
    out.push_back(std::move(ids));
  }
  return out;
}

py::object int_array_or_none(const std::optional<std::vector<int64_t>>& v) {
  return v ? py::object(copy_array(v->data(), static_cast<int64_t>(v->size()))) : py::object(py::none());
}

std::vector<int64_t> next_tokens_of(const TokenSelector& g) { return {g.next_tokens(), g.next_tokens() + g.rows()}; }

std::optional<std::vector<int64_t>> beam_indices_of(const TokenSelector& g) {
  const int64_t* p = g.beam_indices();
  if (!p) return std::nullopt;
  return std::vector<int64_t>(p, p + g.rows());
}

std::vector<std::vector<int64_t>> sequences_of(const TokenSelector& g) {
  const Sequences& s = g.sequences();
  std::vector<std::vector<int64_t>> out(s.rows());
  for (int64_t r = 0; r < s.rows(); ++r) out[r].assign(s.tokens(r), s.tokens(r) + s.length(r));
  return out;
}

std::vector<FinishReason> finish_reasons_of(const TokenSelector& g) {
  std::vector<FinishReason> out(g.rows());
  for (int64_t r = 0; r < g.rows(); ++r) out[r] = g.finish_reason(r);
  return out;
}

py::list list_of_arrays(const std::vector<std::vector<int64_t>>& rows) {
  py::list out;
  for (const auto& r : rows) out.append(copy_array(r.data(), static_cast<int64_t>(r.size())));
  return out;
}

py::list reason_list(const std::vector<FinishReason>& reasons) {
  py::list out;
  for (FinishReason r : reasons) out.append(reason_object(r));
  return out;
}

// Where the last processed logits are: (data, rows, vocab), data null before the first step.
struct LogitsBuffer {
  float* data = nullptr;
  int64_t rows = 0, vocab = 0;
};

LogitsBuffer last_logits_buffer(TokenSelector& g) {
  if (g.steps() == 0) return {};
  return {g.processed_logits(), g.rows(), g.vocab()};
}

// A view over the generator's buffer, kept alive by owner (the buffer lives as long as
// the generator: see TokenSelector::processed_logits).
py::object logits_view_of(const LogitsBuffer& b, py::handle owner) {
  if (!b.data) return py::none();
  const auto rows = static_cast<py::ssize_t>(b.rows), vocab = static_cast<py::ssize_t>(b.vocab);
  const std::vector<py::ssize_t> shape{rows, vocab};
  const std::vector<py::ssize_t> strides{vocab * static_cast<py::ssize_t>(sizeof(float)), sizeof(float)};
  return py::array_t<float>(shape, strides, b.data, owner);
}

// A (steps, n) array of a hypothesis's flat top-n values; None when there are none.
template <class T>
py::object top_array(const std::vector<T>& flat, size_t steps) {
  if (flat.empty() || steps == 0 || flat.size() % steps != 0) return py::none();
  const auto n = static_cast<py::ssize_t>(flat.size() / steps);
  py::array_t<T> out({static_cast<py::ssize_t>(steps), n});
  std::copy(flat.begin(), flat.end(), out.mutable_data());
  return out;
}

py::list hypotheses_of(const std::vector<std::vector<Hypothesis>>& results) {
  py::list out;
  for (const auto& per_input : results) {
    py::list row;
    for (const Hypothesis& h : per_input) {
      py::dict d;
      d["tokens"] = copy_array(h.tokens.data(), static_cast<int64_t>(h.tokens.size()));
      d["prompt_length"] = h.prompt_length;
      d["logprobs"] = copy_array(h.logprobs.data(), static_cast<int64_t>(h.logprobs.size()));
      const bool has_raw = !h.logprobs.empty() && h.raw_logprobs.size() == h.logprobs.size();
      d["raw_logprobs"] = has_raw ? py::object(copy_array(h.raw_logprobs.data(), static_cast<int64_t>(h.raw_logprobs.size())))
                                  : py::object(py::none());
      d["top_ids"] = top_array(h.top_ids, h.logprobs.size());
      d["top_logprobs"] = top_array(h.top_logprobs, h.logprobs.size());
      d["raw_top_ids"] = top_array(h.raw_top_ids, h.logprobs.size());
      d["raw_top_logprobs"] = top_array(h.raw_top_logprobs, h.logprobs.size());
      d["score"] = h.score;
      d["finish_reason"] = reason_object(h.reason);
      row.append(d);
    }
    out.append(row);
  }
  return out;
}

// What TokenSelector.step returns.
struct StepResult {
  py::array_t<int64_t> tokens;
  py::object beam_indices;
  bool done;
  py::object logprobs;       // (rows) float32
  py::object top_token_ids;  // (rows, n) int64 or None
  py::object top_logprobs;   // (rows, n) float32 or None
  py::object raw_top_token_ids, raw_top_logprobs;
};

// A (rows, n) array, or None when empty.
template <class T>
py::object matrix_or_none(const std::vector<T>& v, int64_t n) {
  if (v.empty() || n == 0) return py::none();
  py::array_t<T> out({static_cast<py::ssize_t>(v.size() / n), static_cast<py::ssize_t>(n)});
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

// What TokenSelector.verify returns (see VerifyResult's docstrings).
struct VerifyResult {
  py::array_t<int64_t> tokens;
  bool done;
  py::array_t<int64_t> accepted, rollback, num_emitted;
  py::list emitted, emitted_logprobs;  // per row: int64 / float32 arrays of num_emitted[r] entries
  py::object logprobs;                 // (rows) float32: the last emitted token's
};

VerifyResult verify_result_of(const StepOutput& o) {
  const int64_t rows = static_cast<int64_t>(o.accepted.size()), P = o.positions;
  py::list emitted, emitted_lp;
  for (int64_t r = 0; r < rows; ++r) {
    emitted.append(copy_array(o.emitted.data() + r * P, o.num_emitted[r]));
    emitted_lp.append(copy_array(o.emitted_logprobs.data() + r * P, o.num_emitted[r]));
  }
  return {copy_array(o.tokens.data(), rows), o.done, copy_array(o.accepted.data(), rows),
          copy_array(o.rollback.data(), rows), copy_array(o.num_emitted.data(), rows), std::move(emitted),
          std::move(emitted_lp), copy_array(o.logprobs.data(), rows)};
}

// drafts: (rows, k) integer ids as int64 (a copy: k ids per row); None when k = 0.
std::vector<int64_t> drafts_of(py::handle obj, int64_t rows, int64_t k) {
  if (obj.is_none()) {
    if (k == 0) return {};
    throw ValueError("drafts is None, but the logits have k + 1 = " + std::to_string(k + 1) +
                     " positions per row: pass the drafts (rows, k)");
  }
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(obj);
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u')
    throw TypeError("drafts must hold integer token ids, got dtype " + std::string(py::str(a.dtype())));
  if (a.ndim() != 2 || a.shape(0) != rows || a.shape(1) != k)
    throw ValueError("drafts must have shape (" + std::to_string(rows) + ", " + std::to_string(k) +
                     ") (rows, k) for logits with k + 1 = " + std::to_string(k + 1) + " positions, got " +
                     std::string(py::str(a.attr("shape"))));
  if (kind == 'u' && a.itemsize() == 8 && rows * k > 0 &&
      np.attr("any")(a.attr("__gt__")(py::int_(INT64_MAX))).cast<bool>())
    throw ValueError("drafts holds an id above 2^63 - 1, outside any vocabulary");
  auto ids = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  return {ids.data(), ids.data() + rows * k};
}

// Runs f(generator) with `mutex` held and the GIL released, so that a thread holding the
// mutex never waits for the GIL (f must not touch Python objects: it copies what it reads
// into C++ values, converted once the mutex is released).
template <class G, class F>
auto under_lock(std::mutex& mutex, G& generator, F&& f) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(mutex);
  return f(generator);
}

class PyTokenSelector {
 public:
  PyTokenSelector(const GenerationConfig& config, std::optional<int64_t> batch_size, py::object token_strings,
              bool output_raw_logprobs)
      : gen_(config), expected_batch_(batch_size) {
    if (batch_size && *batch_size < 1) throw ValueError("batch_size must be >= 1, got " + std::to_string(*batch_size));
    if (!token_strings.is_none()) gen_.set_token_texts(token_texts(token_strings));
    gen_.set_keep_raw_logprobs(output_raw_logprobs);
  }

  // f(TokenSelector&) under the generator's mutex (see under_lock).
  template <class F>
  auto read(F&& f) {
    return under_lock(mutex_, gen_, std::forward<F>(f));
  }

  void append_tokens(py::handle prompts, py::handle sequence_ids) {
    auto lists = prompt_lists(prompts);
    auto ids = sequence_id_list(sequence_ids);
    if (expected_batch_ && static_cast<int64_t>(lists.size()) != *expected_batch_)
      throw ValueError("got " + std::to_string(lists.size()) + " prompts, but the Generator was made for batch_size " +
                       std::to_string(*expected_batch_));
    read([&](TokenSelector& g) {
      g.append_tokens(lists, ids);
      return 0;
    });
  }

  StepResult step(py::handle logits, py::handle allowed_tokens) {
    LogitsView lv = logits_view(logits, false);
    MaskView mask = mask_view(allowed_tokens, lv.rows, lv.vocab);
    // the step and the copy of its outcome in one critical section: another thread's
    // step cannot slip in between
    const StepOutput o = read([&](TokenSelector& g) {
      g.step(lv.data, lv.rows, lv.vocab, mask.data);
      return g.last_step();
    });
    return {copy_array(o.tokens.data(), static_cast<int64_t>(o.tokens.size())),
            int_array_or_none(o.beam_indices),
            o.done,
            copy_array(o.logprobs.data(), static_cast<int64_t>(o.logprobs.size())),
            matrix_or_none(o.top_ids, o.top_n),
            matrix_or_none(o.top_logprobs, o.top_n),
            matrix_or_none(o.raw_top_ids, o.top_n),
            matrix_or_none(o.raw_top_logprobs, o.top_n)};
  }

  VerifyResult verify(py::handle logits, py::handle drafts, py::handle draft_lengths, py::handle draft_probs,
                      py::handle allowed_tokens) {
    PositionsView lv = positions_view(logits, "logits");
    const int64_t rows = lv.rows, k = lv.positions - 1, vocab = lv.vocab;
    std::vector<int64_t> draft_ids = drafts_of(drafts, rows, k);
    std::vector<int64_t> lengths(rows, k);
    if (!draft_lengths.is_none()) {
      auto given = ids_view(draft_lengths, rows, "draft_lengths");
      std::copy(given.data(), given.data() + rows, lengths.begin());
    }
    PositionsView q;
    if (!draft_probs.is_none()) {
      q = positions_view(draft_probs, "draft_probs");
      if (q.rows != rows || q.positions != k || q.vocab != vocab)
        throw ValueError("draft_probs must have shape (" + std::to_string(rows) + ", " + std::to_string(k) + ", " +
                         std::to_string(vocab) + ") (rows, k, vocab), got (" + std::to_string(q.rows) + ", " +
                         std::to_string(q.positions) + ", " + std::to_string(q.vocab) + ")");
    }
    MaskView mask = position_mask_view(allowed_tokens, rows, lv.positions, vocab);
    const StepOutput o = read([&](TokenSelector& g) {
      g.verify(lv.data, rows, lv.positions, vocab, draft_ids.empty() ? nullptr : draft_ids.data(), lengths.data(),
               q.data, mask.data);
      return g.last_step();
    });
    return verify_result_of(o);
  }

 private:
  TokenSelector gen_;
  std::optional<int64_t> expected_batch_;
  std::mutex mutex_;  // held by every call that reads or changes gen_
};

// Binds the state readers shared by both generator classes. W::read(f) runs f(TokenSelector&)
// under the lock that the class's step / advance holds.
template <class W>
void def_generator_state(py::class_<W>& cls) {
  const auto get = [](auto f) {
    return [f](W& w) { return w.read([&](TokenSelector& g) { return f(static_cast<const TokenSelector&>(g)); }); };
  };
  cls.def("is_done", get([](const TokenSelector& g) { return g.done(); }), "True when generation has finished.")
      .def_property_readonly("rows", get([](const TokenSelector& g) { return g.rows(); }),
                             "Rows of logits each step expects: batch_size x (num_beams or num_return_sequences).")
      .def_property_readonly("batch_size", get([](const TokenSelector& g) { return g.batch_size(); }),
                             "Number of prompts (0 before append_tokens).")
      .def_property_readonly("num_beams", get([](const TokenSelector& g) { return g.config().num_beams; }),
                             "Beams per prompt (1 without beam search).")
      .def_property_readonly("step_count", get([](const TokenSelector& g) { return g.steps(); }), "Steps taken.")
      .def_property_readonly("config", get([](const TokenSelector& g) { return g.config(); }),
                             "A copy of the GenerationConfig.")
      .def_property_readonly(
          "next_tokens",
          [](W& w) {
            auto t = w.read([](TokenSelector& g) { return next_tokens_of(g); });
            return copy_array(t.data(), static_cast<int64_t>(t.size()));
          },
          "int64 [rows]: the tokens to feed the model next.")
      .def_property_readonly(
          "beam_indices", [](W& w) { return int_array_or_none(w.read([](TokenSelector& g) { return beam_indices_of(g); })); },
          "int64 [rows]: parent row of each row after the last beam step; None otherwise.")
      .def_property_readonly(
          "sequences", [](W& w) { return list_of_arrays(w.read([](TokenSelector& g) { return sequences_of(g); })); },
          "The current token ids of every row (prompt + generated), as a list of int64 arrays.")
      .def_property_readonly(
          "finish_reasons", [](W& w) { return reason_list(w.read([](TokenSelector& g) { return finish_reasons_of(g); })); },
          "Per row: 'eos', 'length', 'stop' or None while running (None for running beams; beam hypotheses carry "
          "theirs in result()).")
      .def_property_readonly(
          "last_logits",
          [](py::object self) {
            LogitsBuffer b = self.cast<W&>().read([](TokenSelector& g) { return last_logits_buffer(g); });
            return logits_view_of(b, self);
          },
          "The last step's processed logits [rows, vocab], a view over the generator's buffer (see kvgen.Generator).")
      .def_property_readonly(
          "mirostat_mu",
          [](W& w) {
            auto mu = w.read([](TokenSelector& g) {
              return g.started() ? std::vector<float>(g.mirostat_mu(), g.mirostat_mu() + g.rows()) : std::vector<float>();
            });
            return copy_array(mu.data(), static_cast<int64_t>(mu.size()));
          },
          "float32 [rows]: mirostat's mu of each row (2 * mirostat_tau before the first step; under beam search a "
          "row carries its parent's).")
      .def(
          "_last_step",
          [](W& w) {
            const StepOutput o = w.read([](TokenSelector& g) { return g.last_step(); });
            return py::make_tuple(copy_array(o.logprobs.data(), static_cast<int64_t>(o.logprobs.size())),
                                  matrix_or_none(o.top_ids, o.top_n), matrix_or_none(o.top_logprobs, o.top_n),
                                  matrix_or_none(o.raw_top_ids, o.top_n), matrix_or_none(o.raw_top_logprobs, o.top_n));
          },
          "(logprobs, top_token_ids, top_logprobs, raw_top_token_ids, raw_top_logprobs) of the last step per row.")
      .def_property_readonly(
          "drafted_tokens",
          [](W& w) {
            auto v = w.read([](TokenSelector& g) {
              std::vector<int64_t> out(g.started() ? g.rows() : 0);
              for (size_t r = 0; r < out.size(); ++r) out[r] = g.drafted_tokens(static_cast<int64_t>(r));
              return out;
            });
            return copy_array(v.data(), static_cast<int64_t>(v.size()));
          },
          "int64 [rows]: draft tokens each row was given in verify() calls while it ran.")
      .def_property_readonly(
          "accepted_tokens",
          [](W& w) {
            auto v = w.read([](TokenSelector& g) {
              std::vector<int64_t> out(g.started() ? g.rows() : 0);
              for (size_t r = 0; r < out.size(); ++r) out[r] = g.accepted_tokens(static_cast<int64_t>(r));
              return out;
            });
            return copy_array(v.data(), static_cast<int64_t>(v.size()));
          },
          "int64 [rows]: of drafted_tokens, those verify() accepted (the acceptance rate is accepted / drafted).")
      .def(
          "max_new_tokens",
          [](W& w, int64_t prompt_length) {
            return w.read([&](TokenSelector& g) { return g.max_new_tokens(prompt_length); });
          },
          py::arg("prompt_length"), "New tokens a prompt of this length may generate at most (the config's limit).")
      .def("_hypotheses", [](W& w) { return hypotheses_of(w.read([](TokenSelector& g) { return g.results(); })); })
      .def(
          "_stop_row", [](W& w, int64_t r) { w.read([r](TokenSelector& g) { g.stop_row(r); return 0; }); }, py::arg("row"),
          "Finishes row r with finish reason 'stop' (its constraint is complete). Greedy / sampling only.");
}

}  // namespace

void register_generator(py::module_& m) {
  py::class_<StepResult>(m, "StepResult", "What Generator.step() returns: the tokens of this step and the beam parents.")
      .def(py::init([](py::array_t<int64_t> tokens, py::object beam_indices, bool done, py::object logprobs,
                       py::object top_token_ids, py::object top_logprobs, py::object raw_top_token_ids,
                       py::object raw_top_logprobs) {
             return StepResult{std::move(tokens), std::move(beam_indices), done, std::move(logprobs),
                               std::move(top_token_ids), std::move(top_logprobs), std::move(raw_top_token_ids),
                               std::move(raw_top_logprobs)};
           }),
           py::arg("tokens"), py::arg("beam_indices"), py::arg("done"), py::arg("logprobs") = py::none(),
           py::arg("top_token_ids") = py::none(), py::arg("top_logprobs") = py::none(),
           py::arg("raw_top_token_ids") = py::none(), py::arg("raw_top_logprobs") = py::none())
      .def_readonly("tokens", &StepResult::tokens,
                    "int64 [rows]: the token each row gets (the tokens to feed next; pad_token_id for finished rows).")
      .def_readonly("beam_indices", &StepResult::beam_indices,
                    "int64 [rows] under beam search: the row each new row continues (reorder your KV cache with "
                    "it: cache = cache[beam_indices]); None otherwise.")
      .def_readonly("done", &StepResult::done, "True when every row has finished.")
      .def_readonly("logprobs", &StepResult::logprobs,
                    "float32 [rows]: the log-probability of each row's token under the processed distribution "
                    "(-inf for rows that had finished).")
      .def_readonly("top_token_ids", &StepResult::top_token_ids,
                    "int64 [rows, top_logprobs]: each row's most likely tokens (see README, top logprobs).")
      .def_readonly("top_logprobs", &StepResult::top_logprobs,
                    "float32 [rows, top_logprobs]: their log-probabilities (on token_logprobs' scale); None when "
                    "top_logprobs is 0.")
      .def_readonly("raw_top_token_ids", &StepResult::raw_top_token_ids,
                    "int64 [rows, top_logprobs]: the same from the raw logits (output_raw_logprobs=True); else None.")
      .def_readonly("raw_top_logprobs", &StepResult::raw_top_logprobs,
                    "float32 [rows, top_logprobs]: log-softmax of the raw logits at raw_top_token_ids; else None.")
      .def("__repr__", [](const StepResult& s) {
        return "StepResult(tokens=" + std::string(py::repr(s.tokens)) + ", beam_indices=" +
               std::string(py::repr(s.beam_indices)) + ", done=" + (s.done ? "True" : "False") + ")";
      });

  py::class_<VerifyResult>(m, "VerifyResult",
                           "What Generator.verify() returns: per row, the draft tokens accepted, the tokens "
                           "appended, the token to feed next and the KV-cache positions to roll back.")
      .def(py::init([](py::array_t<int64_t> tokens, bool done, py::array_t<int64_t> accepted,
                       py::array_t<int64_t> rollback, py::array_t<int64_t> num_emitted, py::list emitted,
                       py::list emitted_logprobs, py::object logprobs) {
             return VerifyResult{std::move(tokens), done, std::move(accepted), std::move(rollback),
                                 std::move(num_emitted), std::move(emitted), std::move(emitted_logprobs),
                                 std::move(logprobs)};
           }),
           py::arg("tokens"), py::arg("done"), py::arg("accepted"), py::arg("rollback"), py::arg("num_emitted"),
           py::arg("emitted"), py::arg("emitted_logprobs"), py::arg("logprobs"))
      .def_readonly("tokens", &VerifyResult::tokens,
                    "int64 [rows]: the token to feed next (the correction or bonus token; pad_token_id for "
                    "finished rows).")
      .def_readonly("done", &VerifyResult::done, "True when every row has finished.")
      .def_readonly("accepted", &VerifyResult::accepted, "int64 [rows]: draft tokens each row accepted.")
      .def_readonly("rollback", &VerifyResult::rollback,
                    "int64 [rows]: positions to drop from the end of each row's KV cache = draft_lengths - accepted "
                    "(the rejected drafts); the cache then holds history + accepted drafts, and `tokens` goes next.")
      .def_readonly("num_emitted", &VerifyResult::num_emitted,
                    "int64 [rows]: tokens appended to each row: accepted + 1 (the correction or bonus token), "
                    "fewer when the row stopped, 0 for rows that had finished.")
      .def_readonly("emitted", &VerifyResult::emitted,
                    "list of int64 arrays, one per row: the tokens appended to the row (accepted drafts, then the "
                    "correction or bonus token).")
      .def_readonly("emitted_logprobs", &VerifyResult::emitted_logprobs,
                    "list of float32 arrays, one per row: each emitted token's log-probability under the processed "
                    "distribution at its position.")
      .def_readonly("logprobs", &VerifyResult::logprobs,
                    "float32 [rows]: the log-probability of each row's last emitted token (-inf for rows that had "
                    "finished), as StepResult.logprobs.")
      .def("__repr__", [](const VerifyResult& v) {
        return "VerifyResult(tokens=" + std::string(py::repr(v.tokens)) + ", accepted=" +
               std::string(py::repr(v.accepted)) + ", rollback=" + std::string(py::repr(v.rollback)) +
               ", done=" + (v.done ? "True" : "False") + ")";
      });

  py::class_<PyTokenSelector> gen(m, "_TokenSelector", "The C++ generation loop over external logits (see kvgen.Generator).");
  gen.def(py::init<const GenerationConfig&, std::optional<int64_t>, py::object, bool>(), py::arg("config"),
          py::arg("batch_size") = py::none(), py::kw_only(), py::arg("token_strings") = py::none(),
          py::arg("output_raw_logprobs") = false)
      .def("append_tokens", &PyTokenSelector::append_tokens, py::arg("prompts"), py::kw_only(),
           py::arg("sequence_ids") = py::none(),
           "Sets the prompts (token-id lists) and their sequence_ids (see kvgen.Generator).")
      .def("step", &PyTokenSelector::step, py::arg("logits"), py::kw_only(), py::arg("allowed_tokens") = py::none(),
           "Picks a token per row from the next-token logits [rows, vocab]; a StepResult (see kvgen.Generator).")
      .def("verify", &PyTokenSelector::verify, py::arg("logits"), py::arg("drafts"), py::arg("draft_lengths") = py::none(),
           py::kw_only(), py::arg("draft_probs") = py::none(), py::arg("allowed_tokens") = py::none(),
           "Speculative verification of draft tokens over logits [rows, k + 1, vocab]; a VerifyResult (see "
           "kvgen.generation.step.TokenSelector.verify).")
      .def_property_readonly(
          "needs_token_texts", [](PyTokenSelector& w) { return w.read([](TokenSelector& g) { return g.needs_token_texts(); }); },
          "True when the config needs token_strings (stop_strings, DRY's sequence breakers) and none were given.")
      .def(
          "set_token_strings",
          [](PyTokenSelector& w, py::handle texts) {
            auto t = token_texts(texts);
            w.read([&](TokenSelector& g) {
              g.set_token_texts(std::move(t));
              return 0;
            });
          },
          py::arg("token_strings"), "Sets the text (str or bytes) of every token id, before append_tokens.");
  def_generator_state(gen);

}

}  // namespace kvgen::bindings
