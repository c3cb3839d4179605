#include "grammar/builder.h"

namespace ferrite::grammar {

void text_location(std::string_view text, size_t offset, size_t* line, size_t* column) {
  *line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++*line;
      line_start = i + 1;
    }
  }
  *column = offset - line_start + 1;
}

uint32_t Builder::user_rule(const std::string& name, size_t offset) {
  auto it = user_names_.find(name);
  if (it != user_names_.end()) return it->second;
  const auto id = static_cast<uint32_t>(rules_.size());
  PendingRule r;
  r.name = name;
  r.offset = offset;
  rules_.push_back(std::move(r));
  user_names_.emplace(name, id);
  return id;
}

bool Builder::define(uint32_t rule) {
  if (rules_[rule].defined) return false;
  rules_[rule].defined = true;
  return true;
}

uint32_t Builder::helper_rule(uint32_t parent) {
  const auto id = static_cast<uint32_t>(rules_.size());
  PendingRule r;
  r.name = rules_[parent].name + "_" + std::to_string(++rules_[parent].helpers);
  r.defined = true;
  rules_.push_back(std::move(r));
  return id;
}

void Builder::add_alternative(uint32_t rule, Sequence seq) {
  rules_[rule].alternatives.push_back(std::move(seq));
}

uint32_t Builder::char_set(CharSet cs) {
  cs.normalize();
  auto key = std::make_pair(cs.negated, cs.ranges);
  auto it = set_index_.find(key);
  if (it != set_index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(char_sets_.size());
  char_sets_.push_back(std::move(cs));
  set_index_.emplace(std::move(key), id);
  return id;
}

Grammar Builder::finish(const std::string& root, std::string_view text) {
  for (const PendingRule& r : rules_) {
    if (!r.defined) {
      size_t line = 0, column = 0;
      text_location(text, r.offset, &line, &column);
      throw GrammarError(line, column, "undefined rule '" + r.name + "'");
    }
  }
  auto root_it = user_names_.find(root);
  if (root_it == user_names_.end()) {
    throw GrammarError(0, 0, "the grammar has no rule named '" + root + "'");
  }
  Grammar g;
  g.char_sets_ = std::move(char_sets_);
  g.root_ = root_it->second;
  g.rules_.resize(rules_.size());
  for (size_t i = 0; i < rules_.size(); ++i) {
    g.rules_[i].name = std::move(rules_[i].name);
    for (Sequence& seq : rules_[i].alternatives) {
      g.rules_[i].alternatives.push_back(static_cast<uint32_t>(g.elements_.size()));
      g.elements_.insert(g.elements_.end(), seq.begin(), seq.end());
      g.elements_.push_back(Element{ElementKind::End, 0});
    }
    rules_[i].alternatives.clear();
  }
  check_left_recursion(g);
  return g;
}

}  // namespace ferrite::grammar
