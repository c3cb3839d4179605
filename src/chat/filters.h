// Jinja filters, split by what they work on: text (filters_text.cpp) and
// sequences / mappings (filters_seq.cpp). apply_filter (interpreter.h)
// looks the name up in both tables.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "chat/interpreter.h"

namespace ferrite::chat {

using FilterFn = std::function<Value(Interpreter&, const Value&, CallArgs&)>;
using FilterTable = std::unordered_map<std::string, FilterFn>;

const FilterTable& text_filters();
const FilterTable& sequence_filters();

}  // namespace ferrite::chat
