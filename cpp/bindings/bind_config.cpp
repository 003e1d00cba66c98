// Binding of kvgen::GenerationConfig as kvgen.GenerationConfig(**kwargs): Hugging Face
// field names, Python-friendly values (None, int-or-list, dict), to_dict, repr, pickle.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <sstream>
#include <type_traits>

#include "kvgen/errors.h"
#include "kvgen/generation_config.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

using Cfg = GenerationConfig;

// Field names in the order to_dict() and repr() show them.
const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names = {
      "max_new_tokens", "max_length", "min_new_tokens", "min_length", "do_sample", "temperature", "top_k",
      "top_p", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "repetition_penalty", "presence_penalty",
      "frequency_penalty", "no_repeat_ngram_size", "bad_words_ids", "suppress_tokens", "begin_suppress_tokens",
      "sequence_bias", "logit_bias", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
      "renormalize_logits", "stop_sequences", "stop_strings", "num_beams", "length_penalty", "early_stopping", "num_return_sequences",
      "eos_token_id", "pad_token_id", "bos_token_id", "seed"};
  return names;
}

std::string type_name(py::handle v) { return py::str(py::type::of(v).attr("__name__")); }

// repr(v), cut to a readable length (an int of 400 digits is a plausible fuzz input).
std::string short_repr(py::handle v) {
  std::string r = py::repr(v);
  return r.size() <= 60 ? r : r.substr(0, 57) + "...";
}

// Python's bool or NumPy's: refused where a number is expected.
bool is_bool(py::handle v) {
  if (PyBool_Check(v.ptr())) return true;
  py::handle type = py::type::of(v);
  return std::string(py::str(type.attr("__module__"))) == "numpy" && (type_name(v) == "bool" || type_name(v) == "bool_");
}

// An integer: a Python int or anything with __index__ (numpy.int64), never a bool.
// bool is a subclass of int, but top_k=True is a mistake, not 1. `what` names the
// expected value in the TypeError.
int64_t as_integer_named(py::handle v, const char* field, const char* what) {
  if (is_bool(v) || !PyIndex_Check(v.ptr()))
    throw TypeError(std::string("GenerationConfig.") + field + " expects " + what + ", got " + type_name(v) + " " + short_repr(v));
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow)
    throw ValueError(std::string("GenerationConfig.") + field + " = " + short_repr(v) +
                     " is out of range: must fit in a signed 64-bit integer");
  return x;
}

int64_t as_integer(py::handle v, const char* field) { return as_integer_named(v, field, "an integer"); }

int64_t as_token(py::handle v, const char* field) { return as_integer_named(v, field, "integer token ids"); }

// A real number (float, int, numpy scalar), never a bool or a str. Range checks are
// GenerationConfig::validate()'s.
double as_float(py::handle v, const char* field) {
  if (is_bool(v) || PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr()))
    throw TypeError(std::string("GenerationConfig.") + field + " expects a float, got " + type_name(v) + " " + short_repr(v));
  const double x = PyFloat_AsDouble(v.ptr());
  if (x == -1.0 && PyErr_Occurred()) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (overflow)  // an int beyond double's range
      throw ValueError(std::string("GenerationConfig.") + field + " = " + short_repr(v) +
                       " is out of range: must be finite as a float32");
    throw TypeError(std::string("GenerationConfig.") + field + " expects a float, got " + type_name(v));
  }
  return x;
}

template <class T>
inline constexpr bool kIsOptional = false;
template <class T>
inline constexpr bool kIsOptional<std::optional<T>> = true;

// A scalar field whose setter converts with `convert` (as_integer / as_float); None
// resets it when the field is optional.
template <auto Member, class Convert>
void def_scalar(py::class_<Cfg>& cls, const char* name, const char* doc, Convert convert) {
  using Field = std::decay_t<decltype(std::declval<Cfg&>().*Member)>;
  cls.def_property(
      name, [](const Cfg& c) { return py::cast(c.*Member); },
      [name, convert](Cfg& c, py::handle v) {
        if constexpr (kIsOptional<Field>) {
          if (v.is_none()) {
            (c.*Member).reset();
            return;
          }
        }
        c.*Member = convert(v, name);
      },
      doc);
}

// A logit_bias key: a token id as an int, or as a str of one (JSON object keys).
int64_t bias_key(py::handle key) {
  if (!py::isinstance<py::str>(key)) return as_token(key, "logit_bias");
  try {
    return as_token(py::int_(py::reinterpret_borrow<py::object>(key)), "logit_bias");
  } catch (py::error_already_set&) {
    throw TypeError("GenerationConfig.logit_bias keys must be token ids (an int, or a str of one), got " +
                    short_repr(key));
  }
}

// None, an int, or a list of ints -> vector.
std::vector<int64_t> token_list(py::handle v, const char* field) {
  std::vector<int64_t> out;
  if (v.is_none()) return out;
  if (py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v)) return {as_token(v, field)};
  for (py::handle item : py::iter(v)) out.push_back(as_token(item, field));
  return out;
}

// vector -> None / int / list, as Hugging Face shows eos_token_id.
py::object int_or_list(const std::vector<int64_t>& v) {
  if (v.empty()) return py::none();
  if (v.size() == 1) return py::int_(v[0]);
  return py::cast(v);
}

py::object list_or_none(const std::vector<int64_t>& v) { return v.empty() ? py::object(py::none()) : py::cast(v); }

// A list-valued field that shows None when empty (HF's default).
template <std::vector<int64_t> Cfg::*Member>
void def_token_list(py::class_<Cfg>& cls, const char* name, const char* doc, bool int_or_list_view) {
  cls.def_property(
      name,
      [int_or_list_view](const Cfg& c) { return int_or_list_view ? int_or_list(c.*Member) : list_or_none(c.*Member); },
      [name](Cfg& c, py::handle v) { c.*Member = token_list(v, name); }, doc);
}

// A list-of-token-lists field (None when empty).
template <std::vector<std::vector<int64_t>> Cfg::*Member>
void def_token_sequences(py::class_<Cfg>& cls, const char* name, const char* doc) {
  cls.def_property(
      name, [](const Cfg& c) { return (c.*Member).empty() ? py::object(py::none()) : py::cast(c.*Member); },
      [name](Cfg& c, py::handle v) {
        (c.*Member).clear();
        if (v.is_none()) return;
        for (py::handle seq : py::iter(v)) {
          if (py::isinstance<py::int_>(seq))
            throw TypeError(std::string("GenerationConfig.") + name +
                            " must be a list of token-id lists, e.g. [[13], [7, 8]]");
          (c.*Member).push_back(token_list(seq, name));
        }
      },
      doc);
}

}  // namespace

void register_generation_config(py::module_& m) {
  py::class_<Cfg> cls(m, "GenerationConfig", R"doc(
Settings of a generation run, with Hugging Face ``GenerationConfig`` field names,
defaults and meanings, plus OpenAI-style ``presence_penalty``, ``frequency_penalty``,
``logit_bias`` and a ``seed``.

Build it with keyword arguments, e.g. ``GenerationConfig(do_sample=True, top_k=40)``.
Unknown names raise ``TypeError``; out-of-range values raise ``ValueError`` naming the
field. Differences from Hugging Face, on purpose:

* ``temperature=0`` means greedy decoding (as vLLM and llama.cpp), where HF raises.
* Defaults are those HF's ``generate()`` applies (``max_length=20``, ``top_k=50``, ...).
* ``seed=None`` draws a fresh random seed on every call.
)doc");

  cls.def(py::init([](const py::kwargs& kwargs) {
            py::object self = py::cast(Cfg{});
            const auto& names = field_names();
            for (auto item : kwargs) {
              const std::string key = py::str(item.first);
              if (std::find(names.begin(), names.end(), key) == names.end())
                throw TypeError("GenerationConfig got an unknown field '" + key +
                                "'; see GenerationConfig.fields() for the supported ones");
              try {
                py::setattr(self, key.c_str(), item.second);
              } catch (py::error_already_set& e) {
                if (!e.matches(PyExc_TypeError)) throw;
                throw TypeError("GenerationConfig." + key + " got a value of the wrong type: " +
                                short_repr(item.second) + " (" + std::string(py::str(e.value())) + ")");
              }
            }
            Cfg cfg = self.cast<Cfg>();
            cfg.validate();
            return cfg;
          }),
          "Builds a config from keyword arguments (Hugging Face names); validates it.");

  def_scalar<&Cfg::max_new_tokens>(cls, "max_new_tokens", "New tokens to generate (None: use max_length). Wins over max_length.", as_integer);
  def_scalar<&Cfg::max_length>(cls, "max_length", "Maximum prompt + generated length (None: 20 new tokens, as HF generate()). max_new_tokens wins.", as_integer);
  def_scalar<&Cfg::min_new_tokens>(cls, "min_new_tokens", "EOS is masked until this many tokens are generated (None: off).", as_integer);
  def_scalar<&Cfg::min_length>(cls, "min_length", "EOS is masked while prompt + generated length < min_length.", as_integer);
  cls.def_readwrite("do_sample", &Cfg::do_sample, "Sample (True) or pick greedily / by beam search (False).");
  def_scalar<&Cfg::temperature>(cls, "temperature", "Divides the logits when sampling; 0 means greedy.", as_float);
  def_scalar<&Cfg::top_k>(cls, "top_k", "Keep the k most likely tokens (ties kept); 0 disables. Default 50, as HF.", as_integer);
  def_scalar<&Cfg::top_p>(cls, "top_p", "Nucleus sampling: keep the smallest set with probability mass >= top_p.", as_float);
  def_scalar<&Cfg::min_p>(cls, "min_p", "Keep tokens with p >= min_p * p_max (None: off).", as_float);
  def_scalar<&Cfg::typical_p>(cls, "typical_p", "Locally typical sampling mass (1.0: off).", as_float);
  def_scalar<&Cfg::epsilon_cutoff>(cls, "epsilon_cutoff", "Drop tokens with p < epsilon_cutoff (0: off).", as_float);
  def_scalar<&Cfg::eta_cutoff>(cls, "eta_cutoff", "Eta sampling: drop p < min(eta, sqrt(eta) * exp(-entropy)) (0: off).", as_float);
  def_scalar<&Cfg::repetition_penalty>(cls, "repetition_penalty", "CTRL penalty on tokens already in the history (1.0: off).", as_float);
  def_scalar<&Cfg::presence_penalty>(cls, "presence_penalty", "OpenAI: subtracted once from every token in the history.", as_float);
  def_scalar<&Cfg::frequency_penalty>(cls, "frequency_penalty", "OpenAI: subtracted per occurrence of a token in the history.", as_float);
  def_scalar<&Cfg::no_repeat_ngram_size>(cls, "no_repeat_ngram_size", "Ban tokens that would repeat an n-gram of this size (0: off).", as_integer);
  cls.def_readwrite("remove_invalid_values", &Cfg::remove_invalid_values, "Replace NaN by 0 and +-inf by +-float max instead of raising on NaN.")
      .def_readwrite("renormalize_logits", &Cfg::renormalize_logits, "Apply log-softmax after all processors.");
  def_scalar<&Cfg::num_beams>(cls, "num_beams", "Number of beams (1: no beam search).", as_integer);
  def_scalar<&Cfg::length_penalty>(cls, "length_penalty", "Beam score = sum of log-probs / length ** length_penalty.", as_float);
  def_scalar<&Cfg::num_return_sequences>(cls, "num_return_sequences", "Sequences returned per input.", as_integer);
  def_scalar<&Cfg::pad_token_id>(cls, "pad_token_id", "Token that fills finished rows.", as_token);
  def_scalar<&Cfg::bos_token_id>(cls, "bos_token_id", "Beginning-of-sequence token.", as_token);
  def_scalar<&Cfg::forced_bos_token_id>(cls, "forced_bos_token_id", "Token forced as the first generated token (None: off).", as_token);

  def_token_list<&Cfg::eos_token_id>(cls, "eos_token_id", "End-of-sequence token id, or a list of them.", true);
  def_token_list<&Cfg::forced_eos_token_id>(cls, "forced_eos_token_id", "Token(s) forced when max_length is reached.", true);
  def_token_list<&Cfg::suppress_tokens>(cls, "suppress_tokens", "Tokens masked at every step.", false);
  def_token_list<&Cfg::begin_suppress_tokens>(cls, "begin_suppress_tokens", "Tokens masked at the first generated position.", false);

  def_token_sequences<&Cfg::bad_words_ids>(cls, "bad_words_ids",
                                            "Token sequences that may never be generated (list of lists).");
  def_token_sequences<&Cfg::stop_sequences>(
      cls, "stop_sequences", "kvgen: a row stops when its generated tokens end with one of these token-id sequences.");

  cls.def_property(
      "stop_strings",
      [](const Cfg& c) { return c.stop_strings.empty() ? py::object(py::none()) : py::cast(c.stop_strings); },
      [](Cfg& c, py::handle v) {
        c.stop_strings.clear();
        if (v.is_none()) return;
        if (py::isinstance<py::str>(v)) {
          c.stop_strings.push_back(v.cast<std::string>());
          return;
        }
        for (py::handle text : py::iter(v)) {
          if (!py::isinstance<py::str>(text)) throw TypeError("GenerationConfig.stop_strings must be a str or a list of str");
          c.stop_strings.push_back(text.cast<std::string>());
        }
      },
      "A row stops when its text ends with one of these strings (HF stop_strings); the Generator needs the "
      "token texts (token_strings=...) or a tokenizer.");

  cls.def_property(
      "sequence_bias",
      [](const Cfg& c) -> py::object {
        if (c.sequence_bias.empty()) return py::none();
        py::dict d;
        for (const auto& [seq, bias] : c.sequence_bias) d[py::tuple(py::cast(seq))] = bias;
        return d;
      },
      [](Cfg& c, py::handle v) {
        c.sequence_bias.clear();
        if (v.is_none()) return;
        auto add = [&c](py::handle seq, py::handle bias) {
          c.sequence_bias.push_back({token_list(seq, "sequence_bias"), as_float(bias, "sequence_bias")});
        };
        if (py::isinstance<py::dict>(v)) {
          for (auto item : py::reinterpret_borrow<py::dict>(v)) add(item.first, item.second);
        } else {
          for (py::handle pair : py::iter(v)) {
            if (!PySequence_Check(pair.ptr()) || py::isinstance<py::str>(pair) || py::len(pair) != 2)
              throw TypeError("GenerationConfig.sequence_bias as a list takes [[ids...], bias] pairs");
            py::sequence s = py::reinterpret_borrow<py::sequence>(pair);
            add(s[0], s[1]);
          }
        }
      },
      "Bias added to the last token of a sequence when its prefix ends the history: "
      "{(id, ...): bias} or [[[id, ...], bias], ...].");

  cls.def_property(
      "logit_bias",
      [](const Cfg& c) { return c.logit_bias.empty() ? py::object(py::none()) : py::cast(c.logit_bias); },
      [](Cfg& c, py::handle v) {
        c.logit_bias.clear();
        if (v.is_none()) return;
        if (!PyMapping_Check(v.ptr()) || !py::hasattr(v, "items") || PySequence_Check(v.ptr()))
          throw TypeError("GenerationConfig.logit_bias must be a dict {token_id: bias}, got " + type_name(v));
        for (py::handle item : v.attr("items")()) {
          py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
          c.logit_bias[bias_key(kv[0])] = as_float(kv[1], "logit_bias");
        }
      },
      "OpenAI-style {token_id: bias} added to the logits at every step (keys may be int or str).");

  cls.def_property(
      "early_stopping",
      [](const Cfg& c) -> py::object {
        if (c.early_stopping == EarlyStopping::Never) return py::str("never");
        return py::bool_(c.early_stopping == EarlyStopping::True);
      },
      [](Cfg& c, py::handle v) {
        if (py::isinstance<py::bool_>(v)) {
          c.early_stopping = v.cast<bool>() ? EarlyStopping::True : EarlyStopping::False;
        } else if (py::isinstance<py::str>(v) && v.cast<std::string>() == "never") {
          c.early_stopping = EarlyStopping::Never;
        } else {
          throw ValueError("GenerationConfig.early_stopping = " + std::string(py::repr(v)) +
                           " is out of range: must be True, False or \"never\"");
        }
      },
      "Beam search stopping: True, False (heuristic) or \"never\" (exhaustive), as Hugging Face.");

  cls.def_property(
      "seed", [](const Cfg& c) { return c.seed; },
      [](Cfg& c, py::handle v) {
        if (v.is_none()) {
          c.seed.reset();
          return;
        }
        if (is_bool(v))
          throw TypeError("GenerationConfig.seed expects None or an integer, got " + short_repr(v));
        if (!py::isinstance<py::int_>(v) || v.cast<py::int_>() < py::int_(0) ||
            v.cast<py::int_>() > py::int_(py::int_(UINT64_MAX)))
          throw ValueError("GenerationConfig.seed = " + short_repr(v) +
                           " is out of range: must be None or an integer in [0, 2**64)");
        c.seed = v.cast<uint64_t>();
      },
      "Seed of the random draws (None: a fresh random seed per call).");

  cls.def("validate", &Cfg::validate, "Raises ValueError naming the first field out of its allowed range.");
  cls.def_static("fields", []() { return field_names(); }, "Names of the supported fields, in display order.");
  cls.def(
      "to_dict",
      [](py::object self) {
        py::dict d;
        for (const auto& name : field_names()) d[py::str(name)] = self.attr(name.c_str());
        return d;
      },
      "All fields as a dict (Hugging Face value conventions: None for unset).");
  cls.def("__eq__", [](const Cfg& a, const Cfg& b) { return a == b; }, py::is_operator());
  cls.def(
      "__repr__",
      [](py::object self) {
        py::object defaults = py::cast(Cfg{});
        std::ostringstream out;
        out << "GenerationConfig(";
        bool first = true;
        for (const auto& name : field_names()) {
          py::object v = self.attr(name.c_str());
          if (v.equal(defaults.attr(name.c_str()))) continue;
          out << (first ? "" : ", ") << name << "=" << std::string(py::repr(v));
          first = false;
        }
        out << ")";
        return out.str();
      },
      "Shows the fields that differ from the defaults.");
  cls.def("__copy__", [](const Cfg& c) { return Cfg(c); });
  cls.def("__deepcopy__", [](const Cfg& c, py::handle) { return Cfg(c); });
  cls.def(py::pickle(
      [](py::object self) { return self.attr("to_dict")(); },
      [](py::dict d) {
        py::object cls = py::module_::import("kvgen").attr("GenerationConfig");
        return cls(**d).cast<Cfg>();
      }));
  m.attr("_GENERATION_CONFIG_FIELDS") = py::cast(field_names());
}

}  // namespace kvgen::bindings
