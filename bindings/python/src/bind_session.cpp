// Session and Generation as Python classes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>

#include "core/error.h"
#include "generation.h"
#include "sampling/logprobs.h"
#include "sampling/param_table.h"
#include "session.h"

namespace ferrite::python {
namespace py = pybind11;
namespace {

// Text the engine produced is whole UTF-8; "replace" guards the odd case.
py::str utf8(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::list top_list(const std::vector<std::pair<int32_t, float>>& top) {
  py::list out;
  for (const auto& [id, lp] : top) out.append(py::make_tuple(id, lp));
  return out;
}

// (token, piece, text, logprob, top, finish or None)
py::tuple step_tuple(const Step& s) {
  py::object finish = s.finish.empty() ? py::object(py::none()) : py::object(py::str(s.finish));
  return py::make_tuple(s.token, py::bytes(s.piece), utf8(s.text), s.logprob, top_list(s.top), finish);
}

const char* pooling_name(model::Pooling p) {
  switch (p) {
    case model::Pooling::Mean: return "mean";
    case model::Pooling::Cls: return "cls";
    case model::Pooling::Last: return "last";
    case model::Pooling::Rank: return "rank";
    case model::Pooling::None: break;
  }
  return "none";
}

std::string metadata_text(const gguf::Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.type() == gguf::ValueType::BOOL) return v.as_bool() ? "true" : "false";
  if (v.is_integer()) return std::to_string(v.as_int());
  return v.to_string();
}

// A Python value as the sampler table takes it (sampling/param_table.h).
sampling::ParamValue param_value(const py::handle& v, const sampling::ParamSpec& spec) {
  if (spec.kind == sampling::ParamKind::LogitBias) {
    if (!py::isinstance<py::dict>(v)) throw InvalidField(spec.name, std::string(spec.name) + " must be a dict of token id -> bias");
    std::vector<sampling::LogitBias> out;
    for (auto [k, b] : v.cast<py::dict>()) out.push_back({k.cast<int32_t>(), b.cast<float>()});
    return out;
  }
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) return v.cast<std::vector<std::string>>();
  throw InvalidField(spec.name, std::string(spec.name) + " has an unsupported type");
}

// Every key must name a sampler parameter; values are checked as the
// command line and the server check them.
sampling::SamplerParams sampler_params(const py::dict& d) {
  sampling::SamplerParams p;
  for (auto [key, value] : d) {
    const std::string name = key.cast<std::string>();
    const sampling::ParamSpec* spec = sampling::find_param(name);
    if (spec == nullptr) throw InvalidArgument("unknown sampling parameter '" + name + "'");
    if (value.is_none()) continue;
    sampling::set_param(p, *spec, param_value(value, *spec));
  }
  sampling::validate(p);
  return p;
}

}  // namespace

void bind_session(py::module_& m) {
  m.def(
      "sampler_parameters",
      [] {
        py::list out;
        for (const sampling::ParamSpec& s : sampling::param_table()) out.append(py::str(s.name));
        return out;
      },
      "Names of every sampler parameter create_completion() and friends accept.");
  py::class_<Session, std::shared_ptr<Session>>(m, "Session")
      .def(py::init([](const std::string& path, int64_t n_ctx, int64_t n_batch, int n_threads, bool embedding,
                       bool vocab_only, int n_gpu_layers, int pooling_type, const std::string& lora_path,
                       float lora_scale) {
             return std::make_shared<Session>(SessionParams{path, n_ctx, n_batch, n_threads, embedding, vocab_only,
                                                            n_gpu_layers, pooling_type, lora_path, lora_scale});
           }),
           py::arg("model_path"), py::arg("n_ctx") = 512, py::arg("n_batch") = 512, py::arg("n_threads") = 0,
           py::arg("embedding") = false, py::arg("vocab_only") = false, py::arg("n_gpu_layers") = 0,
           py::arg("pooling_type") = -1, py::arg("lora_path") = "", py::arg("lora_scale") = 1.0f)
      .def(
          "tokenize",
          [](const Session& s, const py::bytes& text, bool add_bos, bool special) {
            return s.tokenize(std::string(text), add_bos, special);
          },
          py::arg("text"), py::arg("add_bos") = true, py::arg("special") = false)
      .def(
          "detokenize",
          [](const Session& s, const std::vector<int32_t>& tokens, bool special) {
            return py::bytes(s.detokenize(tokens, special));
          },
          py::arg("tokens"), py::arg("special") = false)
      .def_property_readonly("n_ctx", [](Session& s) { return s.vocab_only() ? int64_t{0} : s.context().n_ctx(); })
      .def_property_readonly("n_vocab", [](const Session& s) { return s.tokenizer().n_vocab(); })
      .def_property_readonly("n_embd", [](const Session& s) { return s.model().hparams().n_embd; })
      .def_property_readonly("n_ctx_train", [](const Session& s) { return s.model().hparams().n_ctx_train; })
      .def_property_readonly("n_threads", [](Session& s) { return s.vocab_only() ? 0 : s.context().n_threads(); })
      .def_property_readonly("vocab_only", &Session::vocab_only)
      .def_property_readonly("arch", [](const Session& s) { return s.model().hparams().arch; })
      .def_property_readonly("is_encoder", &Session::is_encoder)
      .def_property_readonly("pooling", [](Session& s) { return pooling_name(s.context().pooling()); })
      .def_property_readonly("token_bos", [](const Session& s) { return s.tokenizer().bos(); })
      .def_property_readonly("token_eos", [](const Session& s) { return s.tokenizer().eos(); })
      .def_property_readonly("add_bos", [](const Session& s) { return s.tokenizer().add_bos(); })
      .def("is_eog", [](const Session& s, int32_t id) { return s.tokenizer().is_eog(id); })
      .def_property_readonly("max_embed_tokens", &Session::max_embed_tokens)
      .def("metadata",
           [](const Session& s) {
             py::dict d;
             for (const gguf::KeyValue& kv : s.file().metadata()) {
               if (!kv.value.is_array()) d[py::str(kv.key)] = utf8(metadata_text(kv.value));
             }
             return d;
           })
      .def_property_readonly("cached_tokens", &Session::cached_tokens)
      .def("reset",
           [](Session& s) {
             Session::Busy busy(s);
             s.reset();
           })
      .def(
          "restore",
          [](Session& s, const std::vector<int32_t>& tokens) {
            Session::Busy busy(s);
            s.restore(tokens);
          },
          py::arg("tokens"))
      .def(
          "save_state",
          [](Session& s) {
            Session::Busy busy(s);
            return py::bytes(s.save_state());
          },
          "The KV state of the cached tokens (tokens included), as bytes.")
      .def(
          "load_state",
          [](Session& s, const py::bytes& state) {
            Session::Busy busy(s);
            const std::string_view bytes(state);
            s.load_state(bytes);
          },
          py::arg("state"), "Restores save_state()'s bytes without evaluating anything.")
      .def_property_readonly("n_evaluated", &Session::n_evaluated)
      .def_property_readonly("busy", &Session::busy, "A call is evaluating, in this thread or another.")
      .def(
          "eval",
          [](Session& s, const std::vector<int32_t>& tokens) {
            Session::Busy busy(s);
            s.next_epoch();
            std::vector<int32_t> all = s.cached_tokens();
            all.insert(all.end(), tokens.begin(), tokens.end());
            const std::span<const float> logits = s.prefill(all);
            return std::vector<float>(logits.begin(), logits.end());
          },
          py::arg("tokens"), "Appends tokens to the cache; returns the logits after the last one.")
      .def(
          "all_logits",
          [](Session& s, const std::vector<int32_t>& tokens) {
            // The cache then holds `tokens`, every position evaluated afresh.
            Session::Busy busy(s);
            s.next_epoch();
            s.prefill(tokens, /*all_logits=*/true);
            const std::vector<float>& rows = s.prompt_logits();
            return py::bytes(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(float));
          },
          py::arg("tokens"), "Makes the cache hold `tokens`; the logits after each, float32 rows [n][n_vocab].")
      .def(
          "prompt_logprobs",
          [](Session& s, const std::vector<int32_t>& tokens, int n_top) {
            // Entry i (i >= 1): log p(tokens[i] | tokens[:i]) and the best alternatives there.
            Session::Busy busy(s);
            s.next_epoch();
            s.prefill(tokens, /*all_logits=*/true);
            const std::vector<float>& rows = s.prompt_logits();
            const size_t nv = static_cast<size_t>(s.context().n_vocab());
            py::list out;
            for (size_t i = 1; i < tokens.size(); ++i) {
              std::vector<std::pair<int32_t, float>> top;
              const std::span<const float> row(rows.data() + (i - 1) * nv, nv);
              const float lp = sampling::token_logprob(row, tokens[i], &top, n_top);
              out.append(py::make_tuple(lp, top_list(top)));
            }
            return out;
          },
          py::arg("tokens"), py::arg("n_top"))
      .def(
          "embed",
          [](Session& s, const std::vector<std::vector<int32_t>>& inputs) {
            Session::Busy busy(s);
            bool per_token = false;
            std::vector<std::vector<float>> e = s.embed(inputs, &per_token);
            return py::make_tuple(e, per_token);
          },
          py::arg("inputs"), "(vectors, per_token): pooled vectors, or flattened token states.")
      .def(
          "generate",
          [](std::shared_ptr<Session> s, const std::vector<int32_t>& prompt, const py::dict& sampling,
             int64_t max_tokens, std::vector<std::string> stop, std::string grammar, int n_logprobs,
             bool ignore_eos, bool tool_calls) {
            runtime::GenerationParams p;
            p.sampling = sampler_params(sampling);
            p.n_predict = max_tokens;
            p.stop = std::move(stop);
            p.grammar = std::move(grammar);
            p.n_probs = n_logprobs;
            p.ignore_eos = ignore_eos;
            p.parse_tool_calls = tool_calls;
            return std::make_unique<Generation>(std::move(s), prompt, std::move(p));
          },
          py::arg("prompt"), py::arg("sampling") = py::dict(), py::arg("max_tokens") = 16,
          py::arg("stop") = std::vector<std::string>{}, py::arg("grammar") = "", py::arg("n_logprobs") = -1,
          py::arg("ignore_eos") = false, py::arg("tool_calls") = false);

  py::class_<Generation>(m, "Generation")
      .def("step", [](Generation& g) { return step_tuple(g.step()); },
           "(token, piece, text, logprob, top, finish): token -1 when the step only ends the generation.")
      .def("run",
           [](Generation& g) {
             py::list out;
             while (!g.done()) out.append(step_tuple(g.step()));
             return out;
           })
      .def_property_readonly("done", &Generation::done)
      .def_property_readonly("n_prompt", &Generation::n_prompt)
      .def_property_readonly("n_generated", &Generation::n_generated)
      .def_property_readonly("seed", &Generation::seed)
      .def_property_readonly(
          "reply",
          [](const Generation& g) {
            py::list calls;
            for (const chat::ToolCall& c : g.reply().calls) calls.append(py::make_tuple(c.name, c.arguments));
            return py::make_tuple(utf8(g.reply().content), calls);
          },
          "With tool_calls=True, after the end: (content, [(name, arguments_json)]).");
}

}  // namespace ferrite::python
