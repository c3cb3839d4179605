// Turns OpenAI chat messages into a prompt with the model's chat template
// (tokenizer.chat_template), or a named built-in / file template when the
// model has none or one is forced.
#pragma once

#include <memory>
#include <string>

#include "chat/chat_template.h"
#include "gguf/file.h"

namespace ferrite::runtime {

class ChatFormatter {
 public:
  // `override_name`: a built-in name or a file (empty: the model's template,
  // else `fallback`). Throws InvalidArgument / IoError / TemplateSyntaxError.
  ChatFormatter(const gguf::File& file, const std::string& override_name, const std::string& fallback = "chatml");

  // Renders `messages` (validated and normalized: content parts joined,
  // tool-call arguments parsed) with `tools` (null for none). Throws
  // InvalidField (field "messages" or "messages[i]") for malformed messages
  // or a template that refuses them.
  std::string render(const chat::Json& messages, const chat::Json& tools, bool add_generation_prompt) const;

  const std::string& source() const { return source_; }
  const std::string& origin() const { return origin_; }  // "model", a built-in name or a file
  const std::string& bos_text() const { return bos_; }

 private:
  std::string source_;
  std::string origin_;
  std::string bos_, eos_;
  std::shared_ptr<const chat::Template> template_;
};

// Validates one OpenAI message list and returns it in the shape templates
// expect. Throws InvalidField naming the offending message.
chat::Json normalize_messages(const chat::Json& messages);

}  // namespace ferrite::runtime
