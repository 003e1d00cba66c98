// Binding of kvgen::GenerationConfig as kvgen.GenerationConfig(**kwargs): Hugging Face
// field names, Python-friendly values (None, int-or-list, dict), to_dict, repr, pickle.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string_view>

#include "kvgen/errors.h"
#include "kvgen/generation_config.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

using Cfg = GenerationConfig;

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

// ---- Python side of each field kind (config_field in generation_config.h) ----------------
// Field<Kind>: `annotation` (the type in _core.pyi; a kind whose value may be None ends with
// "| None"), get (C++ -> Python, Hugging Face's conventions: None for unset or empty) and
// set (Python -> C++; TypeError for a wrong type; ranges are GenerationConfig::validate()'s).
template <class Kind>
struct Field;

template <>
struct Field<config_field::Int> {
  static constexpr std::string_view annotation = "int";
  static py::object get(int64_t v) { return py::int_(v); }
  static void set(int64_t& out, py::handle v, const char* name) { out = as_integer(v, name); }
};

template <>
struct Field<config_field::OptionalInt> {
  static constexpr std::string_view annotation = "int | None";
  static py::object get(const std::optional<int64_t>& v) { return py::cast(v); }
  static void set(std::optional<int64_t>& out, py::handle v, const char* name) {
    out = v.is_none() ? std::nullopt : std::optional<int64_t>(as_integer(v, name));
  }
};

template <>
struct Field<config_field::Float> {
  static constexpr std::string_view annotation = "float";
  static py::object get(double v) { return py::float_(v); }
  static void set(double& out, py::handle v, const char* name) { out = as_float(v, name); }
};

template <>
struct Field<config_field::OptionalFloat> {
  static constexpr std::string_view annotation = "float | None";
  static py::object get(const std::optional<double>& v) { return py::cast(v); }
  static void set(std::optional<double>& out, py::handle v, const char* name) {
    out = v.is_none() ? std::nullopt : std::optional<double>(as_float(v, name));
  }
};

// pybind11's bool conversion, as a def_readwrite property has it (True/False, numpy.bool_,
// and with conversion anything with __bool__ and None).
template <>
struct Field<config_field::Bool> {
  static constexpr std::string_view annotation = "bool";
  static py::object get(bool v) { return py::bool_(v); }
  static void set(bool& out, py::handle v, const char* name) {
    try {
      out = v.cast<bool>();
    } catch (const py::cast_error&) {
      throw TypeError(std::string("GenerationConfig.") + name + " expects a bool, got " + type_name(v));
    }
  }
};

template <>
struct Field<config_field::OptionalToken> {
  static constexpr std::string_view annotation = "int | None";
  static py::object get(const std::optional<int64_t>& v) { return py::cast(v); }
  static void set(std::optional<int64_t>& out, py::handle v, const char* name) {
    out = v.is_none() ? std::nullopt : std::optional<int64_t>(as_token(v, name));
  }
};

template <>
struct Field<config_field::TokenList> {
  static constexpr std::string_view annotation = "list[int] | None";
  static py::object get(const std::vector<int64_t>& v) { return list_or_none(v); }
  static void set(std::vector<int64_t>& out, py::handle v, const char* name) { out = token_list(v, name); }
};

template <>
struct Field<config_field::TokenIds> {
  static constexpr std::string_view annotation = "int | list[int] | None";
  static py::object get(const std::vector<int64_t>& v) { return int_or_list(v); }
  static void set(std::vector<int64_t>& out, py::handle v, const char* name) { out = token_list(v, name); }
};

template <>
struct Field<config_field::TokenSequences> {
  static constexpr std::string_view annotation = "list[list[int]] | None";
  static py::object get(const std::vector<std::vector<int64_t>>& v) {
    return v.empty() ? py::object(py::none()) : py::cast(v);
  }
  static void set(std::vector<std::vector<int64_t>>& out, py::handle v, const char* name) {
    out.clear();
    if (v.is_none()) return;
    for (py::handle seq : py::iter(v)) {
      if (py::isinstance<py::int_>(seq))
        throw TypeError(std::string("GenerationConfig.") + name + " must be a list of token-id lists, e.g. [[13], [7, 8]]");
      out.push_back(token_list(seq, name));
    }
  }
};

// A str or a list of them.
template <>
struct Field<config_field::Strings> {
  static constexpr std::string_view annotation = "list[str] | None";
  static py::object get(const std::vector<std::string>& v) { return v.empty() ? py::object(py::none()) : py::cast(v); }
  static void set(std::vector<std::string>& out, py::handle v, const char* name) {
    out.clear();
    if (v.is_none()) return;
    if (py::isinstance<py::str>(v)) {
      out.push_back(v.cast<std::string>());
      return;
    }
    for (py::handle text : py::iter(v)) {
      if (!py::isinstance<py::str>(text))
        throw TypeError(std::string("GenerationConfig.") + name + " must be a str or a list of str");
      out.push_back(text.cast<std::string>());
    }
  }
};

// A str or None.
template <>
struct Field<config_field::OptionalText> {
  static constexpr std::string_view annotation = "str | None";
  static py::object get(const std::optional<std::string>& v) { return py::cast(v); }
  static void set(std::optional<std::string>& out, py::handle v, const char* name) {
    if (v.is_none()) {
      out.reset();
      return;
    }
    if (!py::isinstance<py::str>(v))
      throw TypeError(std::string("GenerationConfig.") + name + " expects a str or None, got " + type_name(v));
    out = v.cast<std::string>();
  }
};

// A JSON document: a str (kept as given) or a dict (serialized with json.dumps); read back
// as the JSON string. Whether it is a valid schema is checked where the config meets a
// tokenizer (kvgen._constraints), by llguidance.
template <>
struct Field<config_field::JsonText> {
  static constexpr std::string_view annotation = "str | dict[str, Any] | None";
  static py::object get(const std::optional<std::string>& v) { return py::cast(v); }
  static void set(std::optional<std::string>& out, py::handle v, const char* name) {
    if (v.is_none()) {
      out.reset();
      return;
    }
    if (py::isinstance<py::str>(v)) {
      out = v.cast<std::string>();
      return;
    }
    if (!py::isinstance<py::dict>(v) && !py::isinstance<py::bool_>(v))
      throw TypeError(std::string("GenerationConfig.") + name + " expects a dict or a JSON str, got " + type_name(v));
    try {
      out = py::module_::import("json").attr("dumps")(v).cast<std::string>();
    } catch (py::error_already_set& e) {
      throw ValueError(std::string("GenerationConfig.") + name + " is not JSON-serializable: " + e.what());
    }
  }
};

// {(id, ...): bias} or [[[id, ...], bias], ...]; shown as the dict.
template <>
struct Field<config_field::SequenceBiasMap> {
  static constexpr std::string_view annotation = "dict[tuple[int, ...], float] | None";
  static py::object get(const SequenceBias& v) {
    if (v.empty()) return py::none();
    py::dict d;
    for (const auto& [seq, bias] : v) d[py::tuple(py::cast(seq))] = bias;
    return d;
  }
  static void set(SequenceBias& out, py::handle v, const char* name) {
    out.clear();
    if (v.is_none()) return;
    auto add = [&out, name](py::handle seq, py::handle bias) {
      out.push_back({token_list(seq, name), as_float(bias, name)});
    };
    if (py::isinstance<py::dict>(v)) {
      for (auto item : py::reinterpret_borrow<py::dict>(v)) add(item.first, item.second);
      return;
    }
    for (py::handle pair : py::iter(v)) {
      if (!PySequence_Check(pair.ptr()) || py::isinstance<py::str>(pair) || py::len(pair) != 2)
        throw TypeError(std::string("GenerationConfig.") + name + " as a list takes [[ids...], bias] pairs");
      py::sequence s = py::reinterpret_borrow<py::sequence>(pair);
      add(s[0], s[1]);
    }
  }
};

// A mapping {token_id: bias}; keys may be str (JSON object keys).
template <>
struct Field<config_field::LogitBiasMap> {
  static constexpr std::string_view annotation = "dict[int, float] | None";
  static py::object get(const std::map<int64_t, double>& v) {
    return v.empty() ? py::object(py::none()) : py::cast(v);
  }
  static void set(std::map<int64_t, double>& out, py::handle v, const char* name) {
    out.clear();
    if (v.is_none()) return;
    if (!PyMapping_Check(v.ptr()) || !py::hasattr(v, "items") || PySequence_Check(v.ptr()))
      throw TypeError(std::string("GenerationConfig.") + name + " must be a dict {token_id: bias}, got " +
                      type_name(v));
    for (py::handle item : v.attr("items")()) {
      py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
      out[bias_key(kv[0])] = as_float(kv[1], name);
    }
  }
};

// True, False or "never", as Hugging Face.
template <>
struct Field<config_field::EarlyStoppingRule> {
  static constexpr std::string_view annotation = "bool | Literal[\"never\"]";
  static py::object get(EarlyStopping v) {
    if (v == EarlyStopping::Never) return py::str("never");
    return py::bool_(v == EarlyStopping::True);
  }
  static void set(EarlyStopping& out, py::handle v, const char* name) {
    if (py::isinstance<py::bool_>(v)) {
      out = v.cast<bool>() ? EarlyStopping::True : EarlyStopping::False;
    } else if (py::isinstance<py::str>(v) && v.cast<std::string>() == "never") {
      out = EarlyStopping::Never;
    } else {
      throw ValueError(std::string("GenerationConfig.") + name + " = " + std::string(py::repr(v)) +
                       " is out of range: must be True, False or \"never\"");
    }
  }
};

// None or an integer in [0, 2**64).
template <>
struct Field<config_field::Seed> {
  static constexpr std::string_view annotation = "int | None";
  static py::object get(const std::optional<uint64_t>& v) { return py::cast(v); }
  static void set(std::optional<uint64_t>& out, py::handle v, const char* name) {
    if (v.is_none()) {
      out.reset();
      return;
    }
    if (is_bool(v))
      throw TypeError(std::string("GenerationConfig.") + name + " expects None or an integer, got " + short_repr(v));
    if (!py::isinstance<py::int_>(v) || v.cast<py::int_>() < py::int_(0) ||
        v.cast<py::int_>() > py::int_(py::int_(UINT64_MAX)))
      throw ValueError(std::string("GenerationConfig.") + name + " = " + short_repr(v) +
                       " is out of range: must be None or an integer in [0, 2**64)");
    out = v.cast<uint64_t>();
  }
};

// One row of the schema, as GenerationConfig._schema() shows it (with the default added).
struct FieldInfo {
  const char* name;
  std::string_view annotation;
  const char* doc;
  bool nullable() const { return annotation.ends_with("| None"); }
};

// The fields in display order, from generation_config_fields.def.
const std::vector<FieldInfo>& schema() {
  static const std::vector<FieldInfo> fields = {
#define KVGEN_CONFIG_FIELD(kind, name, default_value, doc) {#name, Field<config_field::kind>::annotation, doc},
#include "kvgen/generation_config_fields.def"
  };
  return fields;
}

bool is_field(const std::string& name) {
  const auto& fields = schema();
  return std::any_of(fields.begin(), fields.end(), [&name](const FieldInfo& f) { return name == f.name; });
}

// A property converting with Field<Kind>.
template <class Kind, auto Member>
void def_field(py::class_<Cfg>& cls, const char* name, const char* doc) {
  cls.def_property(
      name, [](const Cfg& c) { return Field<Kind>::get(c.*Member); },
      [name](Cfg& c, py::handle v) { Field<Kind>::set(c.*Member, v, name); }, doc);
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
            for (auto item : kwargs) {
              const std::string key = py::str(item.first);
              if (!is_field(key))
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

#define KVGEN_CONFIG_FIELD(kind, name, default_value, doc) def_field<config_field::kind, &Cfg::name>(cls, #name, doc);
#include "kvgen/generation_config_fields.def"

  cls.def("validate", &Cfg::validate, "Raises ValueError naming a field out of its allowed range.");

  // The fields that act only when sampling, from the schema's KVGEN_SAMPLING_FIELD lines:
  // name -> (the value that leaves it out of a sampling chain, "transformers" for one of
  // transformers' warpers or "kvgen" for one of kvgen's own), in schema order.
  py::dict sampling_fields;
#define KVGEN_CONFIG_FIELD(kind, name, default_value, doc)
#define KVGEN_SAMPLING_FIELD(kind, name, default_value, off, sampler, doc) \
  sampling_fields[#name] = py::make_tuple(Field<config_field::kind>::get(config_field::kind::type(off)), #sampler);
#include "kvgen/generation_config_fields.def"
  m.attr("_SAMPLING_FIELDS") = sampling_fields;
  cls.def_static(
      "fields",
      []() {
        py::list names;
        for (const auto& f : schema()) names.append(f.name);
        return names;
      },
      "Names of the supported fields, in display order.");
  cls.def_static(
      "_schema",
      []() {
        py::object defaults = py::cast(Cfg{});
        py::list rows;
        for (const auto& f : schema())
          rows.append(py::make_tuple(f.name, std::string(f.annotation), f.nullable(), defaults.attr(f.name), f.doc));
        return rows;
      },
      "The schema (generation_config_fields.def): (name, stub annotation, nullable, default, doc) per field.");
  cls.def(
      "to_dict",
      [](py::object self) {
        py::dict d;
        for (const auto& f : schema()) d[py::str(f.name)] = self.attr(f.name);
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
        for (const auto& f : schema()) {
          py::object v = self.attr(f.name);
          if (v.equal(defaults.attr(f.name))) continue;
          out << (first ? "" : ", ") << f.name << "=" << std::string(py::repr(v));
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
}

}  // namespace kvgen::bindings
