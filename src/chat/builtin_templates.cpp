// Fallback chat templates for models without one, written for ferrite from
// the published prompt formats. Each renders system/user/assistant turns and
// the generation prompt; tool results render as their own turn where the
// format has a role for them.
#include <array>
#include <utility>

#include "chat/chat_template.h"

namespace ferrite::chat {
namespace {

constexpr const char* kChatml = R"JINJA({%- for message in messages %}
{{- '<|im_start|>' + message.role + '\n' + (message.content if message.content is string else '') }}
{%- if message.tool_calls %}
{%- for call in message.tool_calls %}
{%- set fn = call.function if call.function is defined else call %}
{{- '\n<tool_call>\n{"name": "' + fn.name + '", "arguments": ' + (fn.arguments if fn.arguments is string else fn.arguments | tojson) + '}\n</tool_call>' }}
{%- endfor %}
{%- endif %}
{{- '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- endif %})JINJA";

constexpr const char* kLlama2 = R"JINJA({%- if messages and messages[0].role == 'system' %}
{%- set system = messages[0].content %}
{%- set turns = messages[1:] %}
{%- else %}
{%- set system = none %}
{%- set turns = messages %}
{%- endif %}
{%- for message in turns %}
{%- if (message.role == 'user') != loop.index0 is even %}
{{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
{%- endif %}
{%- if message.role == 'user' %}
{%- set text = message.content | trim %}
{%- if loop.first and system %}
{%- set text = '<<SYS>>\n' + system | trim + '\n<</SYS>>\n\n' + text %}
{%- endif %}
{{- bos_token + '[INST] ' + text + ' [/INST]' }}
{%- else %}
{{- ' ' + message.content | trim + ' ' + eos_token }}
{%- endif %}
{%- endfor %})JINJA";

constexpr const char* kLlama3 = R"JINJA({{- bos_token }}
{%- for message in messages %}
{{- '<|start_header_id|>' + ('ipython' if message.role == 'tool' else message.role) + '<|end_header_id|>\n\n' }}
{%- if message.content is string %}
{{- message.content | trim }}
{%- elif message.tool_calls %}
{%- for call in message.tool_calls %}
{%- set fn = call.function if call.function is defined else call %}
{{- '{"name": "' + fn.name + '", "parameters": ' + (fn.arguments if fn.arguments is string else fn.arguments | tojson) + '}' }}
{%- endfor %}
{%- endif %}
{{- '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %})JINJA";

constexpr const char* kMistral = R"JINJA({%- if messages and messages[0].role == 'system' %}
{%- set system = messages[0].content %}
{%- set turns = messages[1:] %}
{%- else %}
{%- set system = '' %}
{%- set turns = messages %}
{%- endif %}
{{- bos_token }}
{%- for message in turns %}
{%- if message.role == 'user' %}
{{- '[INST] ' + (system + '\n\n' if loop.first and system else '') + message.content + '[/INST]' }}
{%- elif message.role == 'assistant' %}
{{- message.content + eos_token }}
{%- else %}
{{- raise_exception('Only user and assistant roles are supported after the system message') }}
{%- endif %}
{%- endfor %})JINJA";

constexpr const char* kGemma = R"JINJA({{- bos_token }}
{%- if messages and messages[0].role == 'system' %}
{%- set prefix = messages[0].content | trim + '\n\n' %}
{%- set turns = messages[1:] %}
{%- else %}
{%- set prefix = '' %}
{%- set turns = messages %}
{%- endif %}
{%- for message in turns %}
{%- set role = 'model' if message.role == 'assistant' else message.role %}
{{- '<start_of_turn>' + role + '\n' + (prefix if loop.first else '') + message.content | trim + '<end_of_turn>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<start_of_turn>model\n' }}
{%- endif %})JINJA";

constexpr const char* kPhi3 = R"JINJA({%- for message in messages %}
{{- '<|' + message.role + '|>\n' + message.content + '<|end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|assistant|>\n' }}
{%- else %}
{{- eos_token }}
{%- endif %})JINJA";

constexpr const char* kZephyr = R"JINJA({%- for message in messages %}
{{- '<|' + message.role + '|>\n' + message.content + eos_token + '\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|assistant|>\n' }}
{%- endif %})JINJA";

constexpr const char* kVicuna = R"JINJA({%- for message in messages %}
{%- if message.role == 'system' %}
{{- message.content + '\n\n' }}
{%- elif message.role == 'user' %}
{{- 'USER: ' + message.content + '\n' }}
{%- else %}
{{- 'ASSISTANT: ' + message.content + eos_token + '\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- 'ASSISTANT:' }}
{%- endif %})JINJA";

constexpr std::array<std::pair<const char*, const char*>, 8> kBuiltins = {{
    {"chatml", kChatml},
    {"llama2", kLlama2},
    {"llama3", kLlama3},
    {"mistral", kMistral},
    {"gemma", kGemma},
    {"phi3", kPhi3},
    {"zephyr", kZephyr},
    {"vicuna", kVicuna},
}};

}  // namespace

const char* builtin_template(std::string_view name) {
  for (const auto& [n, src] : kBuiltins) {
    if (name == n) return src;
  }
  return nullptr;
}

std::vector<std::string> builtin_template_names() {
  std::vector<std::string> names;
  for (const auto& [n, src] : kBuiltins) names.emplace_back(n);
  return names;
}

}  // namespace ferrite::chat
