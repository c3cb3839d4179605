#include "embed_output.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "core/error.h"

namespace ferrite::tools {
namespace {

constexpr size_t kPreviewValues = 16;   // values shown per embedding when there are several
constexpr size_t kTokenEdgeValues = 3;  // per-token lines: first and last values shown
constexpr size_t kLabelWidth = 6;       // similarity matrix column labels

void appendf(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& out, const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) out.append(buf, std::min(static_cast<size_t>(n), sizeof buf - 1));
}

// One value in the text format: integers for the int16 scaling.
void append_text_value(std::string& out, float v, int normalize) {
  if (normalize == kNormMaxAbsInt16) {
    appendf(out, "%6.0f ", static_cast<double>(v));
  } else {
    appendf(out, "%9.6f ", static_cast<double>(v));
  }
}

// One value in the json/array formats.
void append_json_value(std::string& out, float v, int normalize) {
  if (!std::isfinite(v)) {
    out += "null";  // JSON has no NaN/Inf
  } else if (normalize == kNormMaxAbsInt16) {
    appendf(out, "%1.0f", static_cast<double>(v));
  } else {
    appendf(out, "%1.7f", static_cast<double>(v));
  }
}

std::string format_text(const EmbeddingReport& r) {
  std::string out;
  const size_t n = r.rows.size();
  if (r.per_token) {
    for (size_t j = 0; j < n; ++j) {
      const std::vector<float>& e = r.rows[j];
      appendf(out, "embedding %zu: ", j);
      for (size_t i = 0; i < std::min(kTokenEdgeValues, e.size()); ++i) append_text_value(out, e[i], r.normalize);
      out += " ... ";
      for (size_t i = e.size() - std::min(kTokenEdgeValues, e.size()); i < e.size(); ++i) {
        append_text_value(out, e[i], r.normalize);
      }
      out += "\n";
    }
    return out;
  }
  for (size_t j = 0; j < n; ++j) {
    const std::vector<float>& e = r.rows[j];
    appendf(out, "embedding %zu: ", j);
    const size_t shown = n > 1 ? std::min(kPreviewValues, e.size()) : e.size();
    for (size_t i = 0; i < shown; ++i) append_text_value(out, e[i], r.normalize);
    out += "\n";
  }
  if (n > 1) {
    out += "\ncosine similarity matrix:\n\n";
    for (size_t i = 0; i < n; ++i) {
      const std::string label = i < r.prompts.size() ? r.prompts[i].substr(0, kLabelWidth) : std::to_string(i);
      appendf(out, "%6s ", label.c_str());
    }
    out += "\n";
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) appendf(out, "%6.2f ", cosine_similarity(r.rows[i], r.rows[j]));
      if (i < r.prompts.size()) out += r.prompts[i].substr(0, 10);
      out += "\n";
    }
  }
  return out;
}

std::string format_json(const EmbeddingReport& r, bool array_only) {
  std::string out = array_only ? "[" : "{\n  \"object\": \"list\",\n  \"data\": [\n";
  for (size_t j = 0; j < r.rows.size(); ++j) {
    if (!array_only) appendf(out, "    {\n      \"object\": \"embedding\",\n      \"index\": %zu,\n      \"embedding\": ", j);
    out += "[";
    const std::vector<float>& e = r.rows[j];
    for (size_t i = 0; i < e.size(); ++i) {
      append_json_value(out, e[i], r.normalize);
      if (i + 1 < e.size()) out += ",";
    }
    out += array_only ? "]" : "]\n    }";
    if (j + 1 < r.rows.size()) out += array_only ? "," : ",\n";
  }
  out += array_only ? "]\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace

void normalize_embedding(std::vector<float>& v, int mode) {
  double sum = 0.0;
  if (mode == kNormNone) {
    return;
  } else if (mode == kNormMaxAbsInt16) {
    for (float x : v) sum = std::max(sum, std::fabs(static_cast<double>(x)));
    sum /= kInt16Scale;
  } else if (mode == kNormEuclidean) {
    for (float x : v) sum += static_cast<double>(x) * x;
    sum = std::sqrt(sum);
  } else {
    for (float x : v) sum += std::pow(std::fabs(static_cast<double>(x)), mode);
    sum = std::pow(sum, 1.0 / mode);
  }
  const double scale = sum > 0.0 ? 1.0 / sum : 0.0;
  for (float& x : v) x = static_cast<float>(x * scale);
}

double cosine_similarity(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0.0, aa = 0.0, bb = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  if (aa == 0.0 || bb == 0.0) return aa == 0.0 && bb == 0.0 ? 1.0 : 0.0;
  return dot / (std::sqrt(aa) * std::sqrt(bb));
}

std::string format_embeddings(const EmbeddingReport& report, const std::string& format) {
  if (format == "text") return format_text(report);
  if (format == "json") return format_json(report, /*array_only=*/false);
  if (format == "array") return format_json(report, /*array_only=*/true);
  throw InvalidArgument("unknown embedding output format '" + format + "' (text, json or array)");
}

}  // namespace ferrite::tools
