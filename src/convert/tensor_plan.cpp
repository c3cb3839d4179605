#include "convert/tensor_plan.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <climits>
#include <unordered_map>

#include "core/error.h"

namespace ferrite::convert {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

NameKey name_key(const std::string& name) {
  NameKey k;
  size_t start = 0;
  std::string prev;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    const std::string part = name.substr(start, dot - start);
    std::string out = part;
    if (all_digits(part)) {
      if (k.bid < 0) {
        k.bid = std::stoll(part);
        out = "{bid}";
      } else if (k.xid < 0 && prev == "experts") {
        k.xid = std::stoll(part);
        out = "{xid}";
      }
    }
    k.key += (start == 0 ? "" : ".") + out;
    prev = part;
    start = dot + 1;
  }
  return k;
}

std::string with_bid(const char* pattern, int64_t bid) {
  std::string s(pattern);
  const size_t p = s.find("{bid}");
  if (p != std::string::npos) s.replace(p, 5, std::to_string(bid));
  return s;
}

namespace {

std::vector<Dim> rule_shape(const TensorRule& r) {
  std::vector<Dim> out;
  for (Dim d : r.shape) {
    if (d == Dim::None) break;
    out.push_back(d);
  }
  return out;
}

void check_shape(const StTensor& t, const TensorRule& r, const Dims& dims, const std::string& config) {
  const std::vector<Dim> want = rule_shape(r);
  bool ok = want.size() == t.shape.size();
  for (size_t i = 0; ok && i < want.size(); ++i) {
    const int64_t v = dims.get(want[i]);
    if (want[i] != Dim::Any && v != 0 && v != t.shape[i]) ok = false;
  }
  if (ok) return;
  std::string expect = "[";
  for (size_t i = 0; i < want.size(); ++i) expect += (i ? ", " : "") + dims.describe(want[i]);
  throw ModelError(t.file + ": tensor " + t.name + " has shape " + t.shape_string() + ", but " + config +
                   " implies " + expect + "]");
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// llama.cpp's converter keeps these in F32 whatever the output type.
bool stays_f32(const PlannedTensor& t) {
  if (t.shape.size() <= 1 || ends_with(t.name, "_norm.weight") || !ends_with(t.name, ".weight")) return true;
  if (t.name == "position_embd.weight" || t.name == "token_types.weight") return true;
  if (ends_with(t.name, ".ssm_conv1d.weight")) return true;  // the conv kernels run in f32
  return t.name.rfind("blk.", 0) == 0 && ends_with(t.name, ".ffn_gate_inp.weight");
}

// The shape changes of kSqueeze, kUnsqueeze and kGroupRows (the data keeps its order).
void reshape_ssm(std::vector<int64_t>& shape, uint32_t flags, const Dims& dims, const std::string& name) {
  if (flags & kSqueeze) std::erase(shape, int64_t{1});
  if (flags & kUnsqueeze) shape.push_back(1);
  if (flags & kGroupRows) {
    const int64_t g = dims.ssm_groups;
    if (shape.size() != 1 || g <= 0 || shape[0] % g != 0) {
      throw ModelError("tensor " + name + ": does not split into " + std::to_string(g) + " groups");
    }
    shape = {g, shape[0] / g};
  }
}

// kFirstHalf / kSecondHalf: of each outer block of rows [2 h, cols], rows [0, h) or [h, 2 h);
// interleaved (kInterleaved), the even rows or the odd ones.
// rows x cols: the matrices of buf as the transforms before left them.
void take_half(std::vector<float>& buf, int64_t rows, int64_t cols, bool second, bool interleaved) {
  const int64_t h = rows / 2;
  const int64_t outer = static_cast<int64_t>(buf.size()) / (rows * cols);
  std::vector<float> out(static_cast<size_t>(outer * h * cols));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t r = 0; r < h; ++r) {
      const int64_t src = o * rows + (interleaved ? 2 * r + (second ? 1 : 0) : r + (second ? h : 0));
      const auto from = buf.begin() + static_cast<std::ptrdiff_t>(src * cols);
      std::copy(from, from + cols, out.begin() + static_cast<std::ptrdiff_t>((o * h + r) * cols));
    }
  }
  buf.swap(out);
}

int64_t bid_of(const std::string& gguf) {
  if (gguf.rfind("blk.", 0) != 0) return -1;
  return std::stoll(gguf.substr(4, gguf.find('.', 4) - 4));
}

}  // namespace

void permute_rows(std::vector<float>& d, int64_t rows, int64_t cols, int64_t heads, const std::string& name) {
  if (heads <= 0 || rows % (2 * heads) != 0) {
    throw ModelError("tensor " + name + ": " + std::to_string(rows) + " rows do not split into " +
                     std::to_string(heads) + " heads of pairs");
  }
  const int64_t half = rows / heads / 2;
  std::vector<float> out(d.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t src = (h * 2 + j) * half + i, dst = (h * half + i) * 2 + j;
        std::copy_n(d.begin() + src * cols, cols, out.begin() + dst * cols);
      }
    }
  }
  d.swap(out);
}

namespace {

// Row blocks: the rows are [groups][per][block]; `order` lists (group, index)
// pairs in their new sequence.
void reorder_blocks(std::vector<float>& d, int64_t block_rows, int64_t cols,
                    const std::vector<std::pair<int64_t, int64_t>>& order, int64_t per) {
  std::vector<float> out(d.size());
  int64_t at = 0;
  for (const auto& [g, i] : order) {
    std::copy_n(d.begin() + (g * per + i) * block_rows * cols, block_rows * cols, out.begin() + at * block_rows * cols);
    ++at;
  }
  d.swap(out);
}

}  // namespace

std::vector<PlannedTensor> plan_tensors(const ArchDef& arch, const Checkpoint& ckpt, const Params& params,
                                        std::vector<ExtraTensor> extra, TensorType outtype) {
  const Dims& dims = params.dims;
  std::unordered_map<std::string, const TensorRule*> rules;
  for (const TensorRule& r : arch.rules) rules.emplace(r.hf, &r);
  std::vector<PlannedTensor> planned;
  std::unordered_map<std::string, size_t> index;
  auto create = [&](const std::string& name, const StTensor* from) -> PlannedTensor& {
    const auto [it, fresh] = index.emplace(name, planned.size());
    if (!fresh) {
      throw ModelError(from->file + ": tensor " + from->name + " maps to " + name +
                       ", which another tensor of the checkpoint already gives");
    }
    planned.emplace_back();
    planned.back().name = name;
    return planned.back();
  };

  for (const StTensor* t : ckpt.tensors()) {
    const std::string name = arch.rename ? arch.rename(t->name) : t->name;
    if (std::any_of(arch.drop_suffixes.begin(), arch.drop_suffixes.end(),
                    [&](const char* s) { return ends_with(name, s); }) ||
        std::any_of(arch.drop_prefixes.begin(), arch.drop_prefixes.end(),
                    [&](const char* s) { return name.rfind(s, 0) == 0; }) ||
        (arch.drop && arch.drop(name, params))) {
      continue;
    }
    const NameKey key = name_key(name);
    const auto it = rules.find(key.key);
    if (it == rules.end()) {
      throw ModelError(t->file + ": cannot map tensor " + t->name + " to a " + arch.gguf_arch +
                       " GGUF name (a variant of the architecture this converter does not know)");
    }
    const TensorRule& rule = *it->second;
    if (*rule.gguf == '\0') continue;
    if (key.bid >= dims.n_layer && std::string(rule.gguf).find("{bid}") != std::string::npos) {
      throw ModelError(t->file + ": tensor " + t->name + " is for layer " + std::to_string(key.bid) + ", but " +
                       params.config_path() + " has " + std::to_string(dims.n_layer) + " layers");
    }
    if (!t->is_float()) {
      throw ModelError(t->file + ": tensor " + t->name + " has dtype " + t->dtype +
                       "; only F32, F16, BF16 and F64 weights can be converted");
    }
    check_shape(*t, rule, dims, params.config_path());
    std::string gguf = with_bid(rule.gguf, key.bid);
    if (arch.gguf_rename) gguf = arch.gguf_rename(gguf, params);
    std::vector<int64_t> shape = t->shape;
    if ((rule.flags & kTranspose) && shape.size() >= 2) std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
    reshape_ssm(shape, rule.flags, dims, t->name);
    if (key.xid >= 0) {
      if (key.xid >= dims.experts) {
        throw ModelError(t->file + ": tensor " + t->name + " is expert " + std::to_string(key.xid) + ", but " +
                         params.config_path() + " has " + std::to_string(dims.experts) + " experts");
      }
      auto found = index.find(gguf);
      PlannedTensor& p = found == index.end() ? create(gguf, t) : planned[found->second];
      if (p.sources.empty()) {
        p.sources.assign(static_cast<size_t>(dims.experts), nullptr);
        p.shape = shape;
        p.shape.insert(p.shape.begin(), dims.experts);
        p.flags = rule.flags;
      }
      if (p.sources[static_cast<size_t>(key.xid)] != nullptr) {
        throw ModelError(t->file + ": tensor " + t->name + " maps to an expert of " + gguf + " given twice");
      }
      p.sources[static_cast<size_t>(key.xid)] = t;
      continue;
    }
    if (rule.flags & kSplitGateUp) {
      const size_t at = gguf.find("ffn_gate");
      const bool last = (rule.flags & kSplitLastDim) != 0;
      const size_t back = last ? 1 : 2;
      const size_t dim = shape.size() >= back ? shape.size() - back : 0;
      if (shape.size() < back || shape[dim] % 2 != 0 || at == std::string::npos) {
        throw ModelError(t->file + ": tensor " + t->name + " does not split into gate and up halves");
      }
      shape[dim] /= 2;
      std::string up = gguf;
      up.replace(at, 8, "ffn_up");
      for (const auto& [name, half] : {std::pair{gguf, kFirstHalf}, std::pair{up, kSecondHalf}}) {
        PlannedTensor& h = create(name, t);
        h.sources = {t};
        h.shape = shape;
        h.flags = (rule.flags & ~kSplitGateUp) | half;
      }
      continue;
    }
    PlannedTensor& p = create(gguf, t);
    p.sources = {t};
    p.shape = shape;
    p.flags = rule.flags;
    if (rule.flags & kAlsoOutput) {
      PlannedTensor& o = create("output.weight", t);
      o.sources = {t};
      o.shape = shape;
      o.flags = rule.flags & ~kAlsoOutput;
    }
  }

  // Experts complete; required tensors present.
  for (const PlannedTensor& p : planned) {
    for (size_t e = 0; e < p.sources.size(); ++e) {
      if (p.sources[e] == nullptr) {
        throw ModelError("the checkpoint lacks expert " + std::to_string(e) + " of " + p.name + " (" +
                         std::to_string(p.sources.size()) + " experts in " + params.config_path() + ")");
      }
    }
  }
  for (const char* name : arch.requires_) {
    if (!index.contains(name)) throw ModelError("the checkpoint has no tensor for " + std::string(name));
  }
  for (int64_t bid = 0; bid < dims.n_layer; ++bid) {
    for (const auto& group : arch.layer_requires) {
      const bool any = std::any_of(group.begin(), group.end(),
                                   [&](const char* n) { return index.contains(with_bid(n, bid)); });
      if (!any) throw ModelError("the checkpoint has no tensor for " + with_bid(group.front(), bid));
    }
  }
  for (ExtraTensor& x : extra) {
    PlannedTensor p;
    p.name = x.name;
    p.shape = x.shape;
    p.generated = std::move(x.data);
    if (index.contains(p.name)) continue;  // the checkpoint already has it
    planned.push_back(std::move(p));
  }

  if (arch.finish) arch.finish(planned, params);

  // Order: whole-model tensors first, layers in order, output tensors last.
  auto rank = [](const PlannedTensor& p) {
    const int64_t bid = bid_of(p.name);
    if (bid >= 0) return bid;
    return p.name.rfind("output", 0) == 0 ? INT64_MAX : -1;
  };
  std::stable_sort(planned.begin(), planned.end(),
                   [&](const PlannedTensor& a, const PlannedTensor& b) { return rank(a) < rank(b); });

  for (PlannedTensor& p : planned) {
    if (stays_f32(p) || outtype == TensorType::F32) {
      p.type = TensorType::F32;
    } else if (outtype == TensorType::Q8_0 && p.shape.back() % 32 != 0) {
      p.type = TensorType::F16;  // llama.cpp's fallback for rows Q8_0 cannot hold
    } else {
      p.type = outtype;
    }
  }
  return planned;
}

std::vector<float> tensor_data(const PlannedTensor& t, const Dims& dims) {
  if (t.sources.empty()) return t.generated;
  const StTensor& first = *t.sources.front();
  const auto per = static_cast<size_t>(first.n_elements);
  const bool half = (t.flags & (kFirstHalf | kSecondHalf)) != 0;
  std::vector<float> out((half ? per / 2 : per) * t.sources.size());
  std::vector<float> buf(per);
  const int64_t rows = first.shape.empty() ? 1 : first.shape[0];
  const int64_t cols = rows == 0 ? 0 : static_cast<int64_t>(per) / rows;
  for (size_t e = 0; e < t.sources.size(); ++e) {
    to_f32(*t.sources[e], buf.data());
    if (t.flags & kPermuteQ) permute_rows(buf, rows, cols, dims.n_head, first.name);
    if (t.flags & kPermuteK) permute_rows(buf, rows, cols, dims.n_head_kv, first.name);
    if (t.flags & kNegExp) {
      for (float& v : buf) v = -std::exp(v);
    }
    if (t.flags & kAddOne) {
      for (float& v : buf) v += 1.0f;
    }
    // The last two dimensions of each matrix: [outer][a][b] -> [outer][b][a].
    int64_t mat_rows = first.shape.size() >= 2 ? first.shape[first.shape.size() - 2] : 1;
    int64_t mat_cols = first.shape.empty() ? 1 : first.shape.back();
    if ((t.flags & kTranspose) && first.shape.size() >= 2) {
      std::vector<float> tr(per);
      const int64_t a = mat_rows, b = mat_cols, outer = static_cast<int64_t>(per) / std::max<int64_t>(1, a * b);
      for (int64_t o = 0; o < outer; ++o) {
        const float* src = buf.data() + o * a * b;
        float* dst = tr.data() + o * a * b;
        for (int64_t r = 0; r < a; ++r) {
          for (int64_t c = 0; c < b; ++c) dst[c * a + r] = src[r * b + c];
        }
      }
      buf.swap(tr);
      std::swap(mat_rows, mat_cols);
    }
    if (t.flags & kNeoxQkv) {
      // (n_head, 3, hd) -> (3, n_head, hd)
      const int64_t heads = dims.n_head;
      if (heads <= 0 || rows % (3 * heads) != 0) throw ModelError("tensor " + first.name + ": rows do not split into q|k|v heads");
      std::vector<std::pair<int64_t, int64_t>> order;
      for (int64_t part = 0; part < 3; ++part) {
        for (int64_t h = 0; h < heads; ++h) order.emplace_back(h, part);
      }
      reorder_blocks(buf, rows / (3 * heads), cols, order, 3);
    }
    if (t.flags & kFalconQkv) {
      // (n_kv, n_head / n_kv + 2, hd): every group's queries, then each group's k, then each v.
      const int64_t kv = dims.n_head_kv, g = kv > 0 ? dims.n_head / kv : 0, hd = dims.head_dim;
      if (kv <= 0 || g <= 0 || rows != kv * (g + 2) * hd) {
        throw ModelError("tensor " + first.name + ": rows do not split into " + std::to_string(kv) + " groups of q..q k v");
      }
      std::vector<std::pair<int64_t, int64_t>> order;
      for (int64_t k = 0; k < kv; ++k) {
        for (int64_t q = 0; q < g; ++q) order.emplace_back(k, q);
      }
      for (int64_t k = 0; k < kv; ++k) order.emplace_back(k, g);
      for (int64_t k = 0; k < kv; ++k) order.emplace_back(k, g + 1);
      reorder_blocks(buf, hd, cols, order, g + 2);
    }
    if (half && (t.flags & kSplitLastDim)) {
      mat_rows = first.shape.empty() ? 1 : first.shape.back();
      mat_cols = 1;
    }
    if (half) take_half(buf, mat_rows, mat_cols, (t.flags & kSecondHalf) != 0, (t.flags & kInterleaved) != 0);
    if (t.scale != 1.0f) {
      for (float& v : buf) v *= t.scale;
    }
    std::copy(buf.begin(), buf.end(), out.begin() + static_cast<std::ptrdiff_t>(e * buf.size()));
  }
  return out;
}

}  // namespace ferrite::convert
