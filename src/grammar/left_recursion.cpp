// Left-recursion check: rule A "left-reaches" B when B can be the first
// thing A expands to without consuming input (B appears in an alternative of
// A after only rules that can match the empty string). A cycle of such edges
// makes the matcher expand forever; it is harmless only when every edge of
// the cycle sits at the end of its alternative, because then expansion
// revisits an identical stack, which the matcher deduplicates.
#include <algorithm>
#include <deque>

#include "grammar/builder.h"

namespace ferrite::grammar {

namespace {

struct Edge {
  uint32_t to;
  bool tail;  // the referenced rule is the last element of its alternative
};

std::vector<bool> nullable_rules(const Grammar& g) {
  const auto& rules = g.rules();
  const auto& el = g.elements();
  // Per alternative: its rule and how many rule references are not yet known
  // to be nullable (or -1 when it holds a character and can never be empty).
  std::vector<uint32_t> alt_rule;
  std::vector<int64_t> pending;
  std::vector<std::vector<uint32_t>> occurs(rules.size());  // rule -> alternatives using it
  std::vector<bool> nullable(rules.size(), false);
  std::vector<uint32_t> work;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    for (uint32_t start : rules[r].alternatives) {
      const auto alt = static_cast<uint32_t>(alt_rule.size());
      alt_rule.push_back(r);
      int64_t count = 0;
      for (uint32_t e = start; el[e].kind != ElementKind::End; ++e) {
        if (el[e].kind == ElementKind::Chars) {
          count = -1;
          break;
        }
        ++count;
      }
      pending.push_back(count);
      if (count < 0) continue;
      for (uint32_t e = start; el[e].kind != ElementKind::End; ++e) occurs[el[e].value].push_back(alt);
      if (count == 0 && !nullable[r]) {
        nullable[r] = true;
        work.push_back(r);
      }
    }
  }
  while (!work.empty()) {
    const uint32_t r = work.back();
    work.pop_back();
    for (uint32_t alt : occurs[r]) {
      if (--pending[alt] == 0 && !nullable[alt_rule[alt]]) {
        nullable[alt_rule[alt]] = true;
        work.push_back(alt_rule[alt]);
      }
    }
  }
  return nullable;
}

std::vector<std::vector<Edge>> left_edges(const Grammar& g, const std::vector<bool>& nullable) {
  const auto& el = g.elements();
  std::vector<std::vector<Edge>> edges(g.rules().size());
  for (uint32_t r = 0; r < g.rules().size(); ++r) {
    for (uint32_t start : g.rules()[r].alternatives) {
      for (uint32_t e = start; el[e].kind == ElementKind::Rule; ++e) {
        edges[r].push_back({el[e].value, el[e + 1].kind == ElementKind::End});
        if (!nullable[el[e].value]) break;
      }
    }
  }
  return edges;
}

// Strongly connected components (Tarjan, iterative). Returns component ids.
std::vector<uint32_t> components(const std::vector<std::vector<Edge>>& edges) {
  const size_t n = edges.size();
  constexpr uint32_t kUnvisited = UINT32_MAX;
  std::vector<uint32_t> index(n, kUnvisited), low(n, 0), comp(n, kUnvisited);
  std::vector<bool> on_stack(n, false);
  std::vector<uint32_t> stack;
  std::vector<std::pair<uint32_t, size_t>> call;  // (node, next edge)
  uint32_t counter = 0;
  uint32_t n_comp = 0;
  for (uint32_t s = 0; s < n; ++s) {
    if (index[s] != kUnvisited) continue;
    call.push_back({s, 0});
    while (!call.empty()) {
      auto& [v, i] = call.back();
      if (i == 0 && index[v] == kUnvisited) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (i < edges[v].size()) {
        const uint32_t w = edges[v][i++].to;
        if (index[w] == kUnvisited) {
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = n_comp;
        } while (w != v);
        ++n_comp;
      }
      const uint32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
    }
  }
  return comp;
}

// Names the rules on a left-recursive cycle from `from` back to `to`.
std::string describe_cycle(const Grammar& g, const std::vector<std::vector<Edge>>& edges,
                           uint32_t from, uint32_t to) {
  std::vector<int64_t> prev(edges.size(), -1);
  std::deque<uint32_t> queue{to};
  prev[to] = to;
  while (!queue.empty() && prev[from] < 0) {
    const uint32_t v = queue.front();
    queue.pop_front();
    for (const Edge& e : edges[v]) {
      if (prev[e.to] < 0) {
        prev[e.to] = v;
        queue.push_back(e.to);
      }
    }
  }
  std::vector<uint32_t> path{from};
  for (uint32_t v = from; v != to && prev[v] >= 0;) {
    v = static_cast<uint32_t>(prev[v]);
    path.push_back(v);
  }
  std::string out;
  for (auto it = path.rbegin(); it != path.rend(); ++it) out += g.rules()[*it].name + " -> ";
  return out + g.rules()[to].name;
}

}  // namespace

void check_left_recursion(const Grammar& g) {
  const auto edges = left_edges(g, nullable_rules(g));
  const auto comp = components(edges);
  for (uint32_t v = 0; v < edges.size(); ++v) {
    for (const Edge& e : edges[v]) {
      if (!e.tail && comp[e.to] == comp[v]) {
        throw GrammarError(0, 0,
                           "left recursion is not supported: rule '" + g.rules()[v].name +
                               "' can expand to itself without consuming input (" +
                               describe_cycle(g, edges, v, e.to) + ")");
      }
    }
  }
}

}  // namespace ferrite::grammar
