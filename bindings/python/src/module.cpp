// The `ferrite._ferrite` extension: the engine's objects for the Python
// package (bindings/python/ferrite), which shapes them into
// llama-cpp-python's API.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "errors.h"
#include "generation.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "runtime/chat_format.h"
#include "chat/tool_calls.h"
#include "runtime/offload.h"
#include "session.h"

namespace ferrite::python {

void bind_session(pybind11::module_& m);  // bind_session.cpp
void bind_hub(pybind11::module_& m);      // bind_hub.cpp

namespace {
namespace py = pybind11;

void bind_text_tools(py::module_& m) {
  m.def(
      "json_schema_to_gbnf", [](const std::string& schema) -> std::string { return grammar::json_schema_to_gbnf(std::string_view(schema)); },
      py::arg("schema_json"), "GBNF grammar of the JSON texts a JSON schema (given as JSON text) admits.");
  m.def("json_any_gbnf", &grammar::json_any_gbnf, py::arg("object_only") = true,
        "GBNF grammar of any JSON object (or any JSON value).");
  m.def(
      "check_grammar", [](const std::string& gbnf) { grammar::Grammar::parse(gbnf); }, py::arg("gbnf"),
      "Raises InvalidArgumentError (with line and column) when the GBNF text is not a usable grammar.");
  m.def(
      "parse_tool_calls",
      [](const std::string& text) {
        chat::ParsedReply r = chat::parse_tool_calls(text);
        py::list calls;
        for (const chat::ToolCall& c : r.calls) calls.append(py::make_tuple(c.name, c.arguments));
        return py::make_tuple(r.content, calls);
      },
      py::arg("text"), "(content, [(name, arguments_json)]) of a reply holding tool calls.");
  m.def("builtin_template_names", &chat::builtin_template_names);
  m.def("gpu_offload_available", &runtime::gpu_offload_available, "Whether n_gpu_layers offloads (a CUDA build).");

  py::class_<runtime::ChatFormatter>(m, "ChatFormatter")
      .def(py::init([](Session& s, const std::string& override_name, const std::string& fallback) {
             return std::make_unique<runtime::ChatFormatter>(s.file(), override_name, fallback);
           }),
           // The formatter reads the session's file: the session lives as long as it.
           py::arg("session"), py::arg("override") = "", py::arg("fallback") = "llama2", py::keep_alive<1, 2>())
      .def(
          "render",
          [](const runtime::ChatFormatter& f, const std::string& messages_json, const std::string& tools_json,
             bool add_generation_prompt) {
            const chat::Json messages = chat::Json::parse(messages_json);
            const chat::Json tools = tools_json.empty() ? chat::Json(nullptr) : chat::Json::parse(tools_json);
            return f.render(messages, tools, add_generation_prompt);
          },
          py::arg("messages_json"), py::arg("tools_json") = "", py::arg("add_generation_prompt") = true)
      .def_property_readonly("origin", &runtime::ChatFormatter::origin)
      .def_property_readonly("source", &runtime::ChatFormatter::source);
}

}  // namespace
}  // namespace ferrite::python

PYBIND11_MODULE(_ferrite, m) {
  m.doc() = "ferrite engine bindings (use the ferrite package, not this module)";
  ferrite::python::register_errors(m);
  ferrite::python::bind_text_tools(m);
  ferrite::python::bind_session(m);
  ferrite::python::bind_hub(m);
}
