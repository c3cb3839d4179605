// Chat templates: the runtime's formatter (the model's Jinja template, a
// built-in one or a file) over C messages.
#include "capi/handles.h"
#include "chat/json_value.h"
#include "runtime/chat_format.h"

using namespace ferrite;
using capi::need;

extern "C" {

ferrite_status ferrite_chat_apply_template(const ferrite_model* model, const char* tmpl,
                                           const ferrite_chat_message* messages, size_t n_messages,
                                           int add_generation_prompt, char* buf, size_t capacity,
                                           size_t* length) noexcept {
  return capi::guarded([&] {
    const auto& m = need(model, "model");
    need(length, "length");
    if (messages == nullptr && n_messages > 0) throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, "messages is NULL");
    chat::Json list = chat::Json::array();
    for (size_t i = 0; i < n_messages; ++i) {
      const std::string at = "messages[" + std::to_string(i) + "]";
      if (messages[i].role == nullptr) throw InvalidArgument(at + ".role is NULL");
      if (messages[i].content == nullptr) throw InvalidArgument(at + ".content is NULL");
      list.push_back(chat::Json{{"role", messages[i].role}, {"content", messages[i].content}});
    }
    const runtime::ChatFormatter formatter(m.state->model->file(), tmpl ? tmpl : "");
    const std::string text = formatter.render(list, chat::Json(), add_generation_prompt != 0);
    capi::copy_out(text.data(), text.size(), buf, capacity, length, true);
  });
}

}  // extern "C"
